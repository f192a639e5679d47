-- 0014: the note vectors' code index (issue 21 item 4).
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
