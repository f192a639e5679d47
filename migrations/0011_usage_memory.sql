-- 0011: usage memory. What the owner opened after a search (Enter, copying its link, following it
-- into Note mode, or `mindtui search --opened`), and each owner search's query vector, so later
-- searches compare meaning without embedding old queries again. Owner searches only: an agent's
-- never record an open nor keep a vector. Only the database holds this (never rebuilt from the vault).
-- Opens hang on note_id without a foreign key: a note is rewritten as delete + insert on every
-- change; the importer forgets a note's opens when the note is really deleted (store.usage_store).

ALTER TABLE search_log ADD COLUMN query_vector BLOB;    -- float32 x dimensions, L2-normalised; NULL: none
ALTER TABLE search_log ADD COLUMN vector_model TEXT;    -- the embedding model that made it

CREATE TABLE search_opens (
    open_id   INTEGER PRIMARY KEY,
    search_id INTEGER NOT NULL REFERENCES search_log(search_id) ON DELETE CASCADE,
    note_id   TEXT NOT NULL,
    rank      INTEGER,                -- 1-based place among the search's results; NULL: not among them
    opened_at TEXT NOT NULL,
    how       TEXT NOT NULL CHECK (how IN ('enter', 'copy', 'follow', 'cli'))
) STRICT;
CREATE INDEX search_opens_note ON search_opens(note_id);
CREATE INDEX search_opens_search ON search_opens(search_id);
