-- 0001: the core store: notes, chunks, full text, references, edges, job runs.
-- Applied in one transaction by mindtui.store.migrate; user_version is set by the runner.

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;

CREATE TABLE notes (
    note_id          TEXT PRIMARY KEY,      -- frontmatter id, else a stable hash of the path
    path             TEXT NOT NULL UNIQUE,  -- vault-relative, '/' separated
    title            TEXT NOT NULL,
    type             TEXT NOT NULL,
    declared_id      TEXT,                  -- frontmatter id as written (a duplicate loses its claim)
    aliases          TEXT NOT NULL DEFAULT '[]',   -- JSON list
    tags             TEXT NOT NULL DEFAULT '[]',   -- JSON list, lower case, no '#'
    frontmatter      TEXT NOT NULL DEFAULT '{}',   -- JSON object
    lang             TEXT NOT NULL DEFAULT 'de',   -- de|en: which stemmer indexed it
    content_hash     TEXT NOT NULL,                -- sha256 of the file bytes
    size             INTEGER NOT NULL,
    mtime_ns         INTEGER NOT NULL,
    retriever_weight REAL NOT NULL DEFAULT 1.0,    -- effective: frontmatter, else type
    chunk_profile    TEXT NOT NULL,                -- effective: frontmatter, else type
    ai_processing    INTEGER NOT NULL DEFAULT 1,   -- 0: `ai_processing: none`, automatic steps skip it
    private          INTEGER NOT NULL DEFAULT 0,   -- 1: never leaves through agent-facing outputs
    word_count       INTEGER NOT NULL DEFAULT 0,
    warnings         TEXT NOT NULL DEFAULT '[]',   -- JSON list: what was wrong with the file when parsed
    indexed_at       TEXT NOT NULL
) STRICT;
CREATE INDEX notes_declared_id ON notes(declared_id) WHERE declared_id IS NOT NULL;

CREATE TABLE chunks (
    chunk_id         INTEGER PRIMARY KEY,
    chunk_key        TEXT NOT NULL UNIQUE,   -- '{note_id}#{seq}', what chunk-scope edges name
    note_id          TEXT NOT NULL REFERENCES notes(note_id) ON DELETE CASCADE,
    seq              INTEGER NOT NULL,
    heading_path     TEXT NOT NULL DEFAULT '',  -- 'H1 > H2'
    text             TEXT NOT NULL,
    token_count      INTEGER NOT NULL,       -- upper bound of model tokens of the embedded text
    content_hash     TEXT NOT NULL,          -- sha256 of the embedded text: keys embeddings
    retriever_weight REAL NOT NULL,
    line_start       INTEGER NOT NULL,
    line_end         INTEGER NOT NULL,
    UNIQUE (note_id, seq)
) STRICT;
CREATE INDEX chunks_content_hash ON chunks(content_hash);

-- Contentless: the analyzed (stemmed) text is written by mindtui.store.fulltext, the
-- original text lives in chunks. rowid = chunks.chunk_id.
CREATE VIRTUAL TABLE chunks_fts USING fts5(
    title, headings, body,
    content = '', contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
    DELETE FROM chunks_fts WHERE rowid = old.chunk_id;
END;

-- Every explicit reference as written in a note. Edges are derived from these, and
-- `resolution` is recomputed whenever the set of note names changes.
CREATE TABLE note_links (
    note_id          TEXT NOT NULL REFERENCES notes(note_id) ON DELETE CASCADE,
    seq              INTEGER NOT NULL,
    relation         TEXT NOT NULL,          -- links_to, or a typed relation (similar_to, ...)
    signal           TEXT NOT NULL CHECK (signal IN ('wikilink','inline','callout','frontmatter')),
    rule_id          TEXT NOT NULL,
    confidence       REAL NOT NULL,
    target_raw       TEXT NOT NULL,          -- as written, without the |label
    target_path      TEXT NOT NULL,          -- the part before '#'
    subpath          TEXT NOT NULL DEFAULT '',
    is_embed         INTEGER NOT NULL DEFAULT 0,
    line             INTEGER NOT NULL,       -- 1-based line in the file (0 = frontmatter)
    evidence         TEXT NOT NULL,          -- the sentence, line or table row it stands in
    resolution       TEXT NOT NULL CHECK (resolution IN
                        ('resolved','self','attachment','missing','ambiguous','out_of_corpus')),
    resolved_note_id TEXT,
    detail           TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (note_id, seq)
) STRICT;
CREATE INDEX note_links_resolved ON note_links(resolved_note_id);

CREATE VIEW unresolved_links AS
    SELECT note_id, seq, target_raw, resolution AS reason, detail, line, evidence
    FROM note_links WHERE resolution IN ('missing', 'ambiguous', 'out_of_corpus');

CREATE TABLE edges (
    edge_id       INTEGER PRIMARY KEY,
    kind          TEXT NOT NULL,
    scope         TEXT NOT NULL CHECK (scope IN ('chunk','note')),
    source_id     TEXT NOT NULL,           -- note_id, or chunk_key for scope chunk
    target_id     TEXT NOT NULL,
    owner_note_id TEXT REFERENCES notes(note_id) ON DELETE CASCADE,  -- NULL: no single note owns it
    provenance    TEXT NOT NULL CHECK (provenance IN ('explicit','rule','structure','signal')),
    rule_id       TEXT NOT NULL DEFAULT '',
    confidence    REAL NOT NULL,
    signal        TEXT NOT NULL,
    weight        REAL NOT NULL DEFAULT 1.0,
    evidence      TEXT,
    UNIQUE (source_id, target_id, kind, scope, rule_id)
) STRICT;
CREATE INDEX edges_target ON edges(target_id);
CREATE INDEX edges_owner ON edges(owner_note_id);

CREATE TABLE job_runs (
    run_id     INTEGER PRIMARY KEY,
    batch_id   TEXT NOT NULL,               -- the steps of one job invocation share it
    job        TEXT NOT NULL,               -- nightly | index | ...
    step       TEXT NOT NULL,
    status     TEXT NOT NULL CHECK (status IN ('running','ok','failed','interrupted')),
    started_at TEXT NOT NULL,
    ended_at   TEXT,
    report     TEXT NOT NULL DEFAULT '{}',  -- JSON: the step's counts and warnings
    error      TEXT
) STRICT;
CREATE INDEX job_runs_batch ON job_runs(batch_id);

CREATE TABLE cursors (
    name       TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;
