-- 0017: the ambiguous links, found without reading every link. An agent's view of the graph
-- resolves those that hidden notes made ambiguous (store.visibility) on every query of its
-- edges: a scan of note_links (22k rows in the hub vault) cost each neighbours call ~4 ms.

CREATE INDEX IF NOT EXISTS note_links_ambiguous ON note_links(note_id) WHERE resolution = 'ambiguous';
