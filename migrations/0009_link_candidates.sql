-- 0009: the notes an ambiguous link could mean. An agent may not see some of them: to it the link
-- is what it would be without them (one visible candidate: resolved; none: missing), so no count
-- it reads tells that a hidden note exists (store.visibility). A JSON array of note ids, '[]' for
-- every other link; the next import fills it for links that are ambiguous already.

ALTER TABLE note_links ADD COLUMN candidates TEXT NOT NULL DEFAULT '[]';
