-- 0007: anchor text. The lines in which other notes link to a note describe it in the owner's own
-- words: they are one extra full-text row of that note (chunks_fts rowid = -anchor_id, the text in
-- the body column), rebuilt by the importer whenever references change (store.anchors).

CREATE TABLE note_anchors (
    anchor_id INTEGER PRIMARY KEY,
    note_id   TEXT NOT NULL UNIQUE REFERENCES notes(note_id) ON DELETE CASCADE,
    text_hash TEXT NOT NULL          -- sha256 of the language and lines: unchanged, the row is left alone
) STRICT;

CREATE TRIGGER note_anchors_fts_delete AFTER DELETE ON note_anchors BEGIN
    DELETE FROM chunks_fts WHERE rowid = -old.anchor_id;
END;
