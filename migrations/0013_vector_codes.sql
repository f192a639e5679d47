-- 0013: the vector code index (issue 3.2): every vector of vec_chunks as int8 codes of the vector
-- less the corpus mean, scaled per dimension, in pages of 4,096 embedding ids (embedding_id >> 12).
-- A search scans the codes in memory, exactly, and rescores the best few hundred by their float
-- vectors: at a million chunks far faster than sqlite-vec's float scan, with the same top 50 on
-- real e5 queries (README "Vector search at scale"). Written in the same transaction as every
-- vec_chunks insert and delete (store/vector_codes.py); the mean, the scales and the sampled
-- recall are in meta (key vector_codes), fitted when the index is built.

CREATE TABLE vector_code_pages (
    page_id INTEGER PRIMARY KEY,   -- embedding_id >> 12
    stamp   INTEGER NOT NULL,      -- meta vector_codes_stamp when last written: a process's copy is stale when it moved
    ids     BLOB NOT NULL,         -- int64 embedding ids, ascending
    codes   BLOB NOT NULL          -- int8 x dimensions per id, in the same order
) STRICT;

-- The same vectors as float16, one row each, to rank the candidates again: vec0 finds a vector
-- by rowid only by walking its 1.5 MB chunk blob (~0.8 ms; `rowid IN (...)` scans the whole
-- table), a row here is one b-tree page. Half the bytes of the floats, the ranking of float32
-- (bench/ann_bench.py), kept with the codes.
CREATE TABLE vector_halves (
    embedding_id INTEGER PRIMARY KEY,
    half         BLOB NOT NULL     -- float16 x dimensions
) STRICT;
