-- 0003: the search graph. Every logged (explicit) search keeps its query and top results;
-- every unordered pair among those results gains weight 1 in search_pairs (note_a < note_b).
-- Only the database holds this: a rebuild from the vault must never drop it.

CREATE TABLE search_log (
    search_id  INTEGER PRIMARY KEY,
    searched_at TEXT NOT NULL,
    query      TEXT NOT NULL,
    mode       TEXT NOT NULL,
    results    TEXT NOT NULL DEFAULT '[]'   -- JSON list of note_ids, best first
) STRICT;

CREATE TABLE search_pairs (
    note_a     TEXT NOT NULL,
    note_b     TEXT NOT NULL,
    weight     INTEGER NOT NULL DEFAULT 0,
    last_seen  TEXT NOT NULL,
    PRIMARY KEY (note_a, note_b),
    CHECK (note_a < note_b)
) STRICT;
CREATE INDEX search_pairs_b ON search_pairs(note_b);
