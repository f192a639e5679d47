-- 0012: note vectors (issue 21 item 4). One vector per note, the normalised mean of its chunks'
-- vectors, so a note's suggestions are one KNN query instead of one per chunk. Written by the
-- embed sweep (store.note_vectors.refresh_note_vectors), for notes a model may read only.
-- vec_notes.rowid = note_embeddings.note_vector_id. No foreign key to notes: a changed note is
-- rewritten as delete + insert, and its vector is kept, marked stale, so that the sweep
-- recomputes it only when the note's embedded chunks really changed (source_key).

CREATE TABLE note_embeddings (
    note_vector_id INTEGER PRIMARY KEY,
    note_id        TEXT NOT NULL UNIQUE,
    model_id       TEXT NOT NULL,
    source_key     TEXT NOT NULL,             -- sha256 of the embedded chunks' content hashes, in order
    chunks         INTEGER NOT NULL,          -- chunk vectors averaged; 0: none yet, no vec_notes row
    stale          INTEGER NOT NULL DEFAULT 0 -- 1: the note or its chunk vectors changed since
) STRICT;
CREATE INDEX note_embeddings_stale ON note_embeddings(note_id) WHERE stale = 1;

CREATE VIRTUAL TABLE vec_notes USING vec0(embedding float[384] distance_metric=cosine);

CREATE TRIGGER note_embeddings_vec_delete AFTER DELETE ON note_embeddings BEGIN
    DELETE FROM vec_notes WHERE rowid = old.note_vector_id;
END;

CREATE TRIGGER notes_note_vector_stale AFTER DELETE ON notes BEGIN
    UPDATE note_embeddings SET stale = 1 WHERE note_id = old.note_id;
END;
