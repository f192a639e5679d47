-- 0014: notes in the order the embed sweep reads them (the most recently edited first). Its page
-- query walks this index from a cursor instead of grouping and sorting every pending chunk per
-- page (3.4 s a page at 541k chunks: a first embedding of a large vault spent more time choosing
-- its next texts than it can afford, and a --budget run overshot by that much).
CREATE INDEX notes_mtime ON notes(mtime_ns, note_id);
