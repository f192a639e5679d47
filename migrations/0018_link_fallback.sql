-- 0018: what a link to notes means without them. A link resolves by the first of Obsidian's
-- rules that finds a note (vault path, path from the linking note's folder, path suffix or file
-- name); an agent that may see none of the notes that rule found reads the link as the vault
-- without them resolves it: by the next rule with a note it may see (store.visibility). A JSON
-- array of the later rules' note ids, one sorted array per rule that finds any: '[]' for most
-- links (a file name is the last rule). The next import resolves every link again to fill it.

ALTER TABLE note_links ADD COLUMN fallback TEXT NOT NULL DEFAULT '[]';

CREATE INDEX IF NOT EXISTS note_links_fallback ON note_links(note_id) WHERE fallback != '[]';

INSERT INTO meta (key, value) VALUES ('relink_pending', '1')
    ON CONFLICT (key) DO UPDATE SET value = '1';
