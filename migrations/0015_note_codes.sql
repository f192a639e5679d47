-- 0015: the note vectors' code index and incremental link suggestions (issue 21 item 4).
--
-- note_code_pages / note_vector_halves: the code index of vec_notes, as migration 0013's of
-- vec_chunks (store/vector_codes.py, space NOTES; ids are note_embeddings.note_vector_id),
-- written in the same transaction as every vec_notes insert and delete
-- (store/note_vectors.refresh_note_vectors); the fit is in meta (key note_codes).

CREATE TABLE note_code_pages (
    page_id INTEGER PRIMARY KEY,   -- note_vector_id >> 12
    stamp   INTEGER NOT NULL,      -- meta note_codes_stamp when last written
    ids     BLOB NOT NULL,         -- int64 note vector ids, ascending
    codes   BLOB NOT NULL          -- int8 x dimensions per id, in the same order
) STRICT;

CREATE TABLE note_vector_halves (
    note_vector_id INTEGER PRIMARY KEY,
    half           BLOB NOT NULL   -- float16 x dimensions
) STRICT;

-- The notes whose close notes the nightly's link suggestions must look up again
-- (store/close_pairs.py): a note whose vector was written or removed (spread = 1: its close
-- notes too), or a close note of one (spread = 0). A row leaves in the transaction that writes
-- the note's pairs, so a killed refresh goes on where it stopped.
CREATE TABLE note_vector_changes (
    note_id TEXT PRIMARY KEY,
    spread  INTEGER NOT NULL DEFAULT 1
) STRICT;

CREATE TRIGGER note_embeddings_changed_insert AFTER INSERT ON note_embeddings BEGIN
    INSERT OR REPLACE INTO note_vector_changes (note_id, spread) VALUES (new.note_id, 1);
END;

CREATE TRIGGER note_embeddings_changed_delete AFTER DELETE ON note_embeddings BEGIN
    INSERT OR REPLACE INTO note_vector_changes (note_id, spread) VALUES (old.note_id, 1);
END;

-- A note's close notes as last looked up: `other_id` is among the nearest notes of `note_id` by
-- note vector, at a cosine of at least the floor the lookup was made with (meta close_pairs).
CREATE TABLE note_close_pairs (
    note_id  TEXT NOT NULL,
    other_id TEXT NOT NULL,
    cosine   REAL NOT NULL,
    PRIMARY KEY (note_id, other_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX note_close_pairs_other ON note_close_pairs(other_id);
CREATE INDEX note_close_pairs_cosine ON note_close_pairs(cosine);  -- the closest first, without a sort

-- Every note vector already written is new to the suggestions.
INSERT INTO note_vector_changes (note_id, spread) SELECT note_id, 1 FROM note_embeddings;
