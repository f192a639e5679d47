-- 0016: a chunk's structure edges (belongs_to its note, next/prev between consecutive chunks) are
-- no longer rows: the chunks' note_id and seq say the same, and the three rows a chunk cost were
-- most of the edge table and of a cold import's index writes (issue 21 item 5). Nothing read
-- them but the import's structure_total, which store.edges.edge_counts now counts from chunks.
DELETE FROM edges WHERE provenance = 'structure';
