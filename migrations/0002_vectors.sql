-- 0002: chunk vectors. An embedding is keyed by (model, content hash of the embedded text),
-- so identical text is embedded once and a changed chunk re-embeds only itself.
-- vec_chunks.rowid = embeddings.embedding_id; chunks find theirs through content_hash.

CREATE TABLE embeddings (
    embedding_id INTEGER PRIMARY KEY,
    model_id     TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    dim          INTEGER NOT NULL,
    created_at   TEXT NOT NULL,
    UNIQUE (model_id, content_hash)
) STRICT;

CREATE VIRTUAL TABLE vec_chunks USING vec0(embedding float[384] distance_metric=cosine);

CREATE TRIGGER embeddings_vec_delete AFTER DELETE ON embeddings BEGIN
    DELETE FROM vec_chunks WHERE rowid = old.embedding_id;
END;

-- Which chunk has which vector (one embedding may serve several chunks with the same text).
CREATE VIEW chunk_vectors AS
    SELECT c.chunk_id, c.note_id, e.model_id, c.content_hash, e.embedding_id
    FROM chunks c JOIN embeddings e ON e.content_hash = c.content_hash;
