-- 0010: note names. Every name a note can be found by (vault path and file name without `.md`,
-- title, aliases), keyed as mindtui.text.names.exact_key compares names (no case, single spaces):
-- finding a note by name is one index lookup (store.names), not a scan that decodes every note's
-- aliases. Rows are written with their note (store.notes.insert_note) and go with it.
-- `mindtui_name_key` is exact_key, registered on every connection by the store's factory.

CREATE TABLE note_names (
    key     TEXT NOT NULL,
    how     TEXT NOT NULL,           -- path | title | alias | file name
    note_id TEXT NOT NULL REFERENCES notes(note_id) ON DELETE CASCADE
) STRICT;

CREATE INDEX note_names_key ON note_names(key);
CREATE INDEX note_names_note ON note_names(note_id);

-- A file name is the stem after its last '/': rtrim drops the stem's last part, replace cuts the rest.
INSERT INTO note_names (key, how, note_id)
WITH stems AS (
    SELECT note_id, title, aliases,
           CASE WHEN lower(path) LIKE '%.md' THEN substr(path, 1, length(path) - 3) ELSE path END AS stem
      FROM notes
), names AS (
    SELECT note_id, 'path' AS how, stem AS name FROM stems
    UNION ALL SELECT note_id, 'title', title FROM stems
    UNION ALL SELECT s.note_id, 'alias', a.value FROM stems s, json_each(s.aliases) a WHERE a.type = 'text'
    UNION ALL SELECT note_id, 'file name', replace(stem, rtrim(stem, replace(stem, '/', '')), '') FROM stems
)
SELECT DISTINCT mindtui_name_key(name), how, note_id FROM names WHERE mindtui_name_key(name) <> '';
