-- 0022: the paths notes had before the import matched a rename (vault.renames). A link still
-- naming the old path is missing; its curation card can then say which note the name was
-- (curation.links). One row a former path, kept while that note exists and no note took the
-- path back (store.former_paths.prune, at the end of each import).

CREATE TABLE IF NOT EXISTS note_former_paths (
    path     TEXT PRIMARY KEY,   -- vault-relative, as the note was at
    note_id  TEXT NOT NULL       -- the note now (not a foreign key: a rewritten note's row is replaced)
);
CREATE INDEX IF NOT EXISTS note_former_paths_note ON note_former_paths(note_id);
