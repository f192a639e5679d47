-- 0024: champion lists of the full-text index (store.fts_champions): for each phrase in a large
-- share of chunks_fts's rows, its best rows by the phrase's own BM25 weight, made by the nightly;
-- a query with such phrases ranks a few hundred rows instead of half a million. Rows written to
-- the index after the lists were made are logged, so a query still ranks them (their words may
-- beat a list's last row).

CREATE TABLE IF NOT EXISTS fts_champion_phrases (
    phrase        TEXT PRIMARY KEY,   -- an FTS5 string as queries write it: '"plugin"', or '"plugi"*'
    rows_matching INTEGER NOT NULL,   -- rows of chunks_fts it matched when listed (its idf then)
    listed        INTEGER NOT NULL    -- rows in its list: all it matched when equal
) STRICT;

CREATE TABLE IF NOT EXISTS fts_champion_rows (
    phrase TEXT NOT NULL,
    rank   INTEGER NOT NULL,          -- 0: the phrase's best row
    row    INTEGER NOT NULL,          -- chunks_fts rowid (negative: an anchor row)
    weight REAL NOT NULL,             -- the phrase's BM25 term in that row divided by its idf then
    PRIMARY KEY (phrase, rank)
) STRICT, WITHOUT ROWID;

-- Full-text rows written since the lists were made (a chunk's rowid is its chunk_id, an anchor
-- row's -anchor_id; both tables' only writers insert a new row with each new text).
CREATE TABLE IF NOT EXISTS fts_champion_written (
    row INTEGER PRIMARY KEY
) STRICT;

CREATE TRIGGER IF NOT EXISTS chunks_champion_written AFTER INSERT ON chunks
WHEN EXISTS (SELECT 1 FROM fts_champion_phrases) BEGIN
    INSERT OR IGNORE INTO fts_champion_written (row) VALUES (new.chunk_id);
END;

CREATE TRIGGER IF NOT EXISTS note_anchors_champion_written AFTER INSERT ON note_anchors
WHEN EXISTS (SELECT 1 FROM fts_champion_phrases) BEGIN
    INSERT OR IGNORE INTO fts_champion_written (row) VALUES (-new.anchor_id);
END;

-- An anchor row's analyzed text as written to chunks_fts (store.fts_rows reads a row's words
-- again; a chunk's are made from its stored text). NULL: written before 0024; the nightly fills
-- it in where the row's lines are still those it was made of (store.anchors.fill_indexed).
ALTER TABLE note_anchors ADD COLUMN indexed TEXT;
