-- 0006: knowledge items, the writer's decision log, and their full text.
-- knowledge_items: distilled, sourced statements ("we decided to use SQLite"). Only the database
--   holds them (except callout items, which the vault can recreate): nothing is ever deleted;
--   superseding ends an item (is_current 0, ended_at, superseded_by) and keeps it as history.
--   Models and agents never write here: one writer (mindtui.knowledge.writer) decides.
-- knowledge_sources: every independent source that stated an item (its first source included):
--   two independent sources confirm a draft; a repeat from the same source counts once.
-- knowledge_decisions: every proposal the writer saw and what it decided, with the reason.
-- knowledge_fts: the items' analysed text (same analysis as chunks), rowid = item_id.

CREATE TABLE knowledge_items (
    item_id          INTEGER PRIMARY KEY,
    type             TEXT NOT NULL CHECK (type IN
                        ('fact', 'decision', 'learning', 'playbook', 'preference', 'reference', 'instruction')),
    title            TEXT NOT NULL,            -- one line: the statement itself
    body             TEXT NOT NULL DEFAULT '', -- more detail (may be empty)
    quote            TEXT,                     -- the source's own words the statement rests on
    about_note_id    TEXT,                     -- the entity note it is about (person, project, ...)
    about_topic      TEXT,                     -- else a free topic ("Suche"); both NULL: about nothing in particular
    status           TEXT NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'confirmed', 'superseded')),
    is_current       INTEGER NOT NULL DEFAULT 1,  -- 0 once superseded or retracted
    valid_from       TEXT NOT NULL,
    ended_at         TEXT,
    superseded_by    INTEGER REFERENCES knowledge_items(item_id),
    stale_since      TEXT,                     -- its source text changed or vanished (a card asks the owner)
    source_type      TEXT NOT NULL CHECK (source_type IN ('note', 'agent', 'owner', 'job')),
    source_id        TEXT NOT NULL,            -- note: '<note_id>#<callout line key>'; agent: 'agent:<name>';
                                               -- owner: 'owner'; job: 'job:<run id>'
    source_note_id   TEXT,                     -- note sources: the note (no foreign key: the item outlives it)
    source_chunk_seq INTEGER,                  -- note sources: the chunk the statement stands in
    source_hash      TEXT,                     -- note sources: sha256 of the source text when read (staleness)
    run_id           INTEGER,                  -- the job run that wrote it, if any
    confidence       REAL NOT NULL DEFAULT 0.5 CHECK (confidence >= 0 AND confidence <= 1),
    visibility       TEXT NOT NULL DEFAULT 'shared' CHECK (visibility IN ('shared', 'private')),
    importance       REAL NOT NULL DEFAULT 0.5 CHECK (importance >= 0 AND importance <= 1),
    importance_at    TEXT NOT NULL,            -- when importance was last set (decay runs from here)
    statement_hash   TEXT NOT NULL,            -- sha256 of type + normalised title/body + about: exact duplicates
    content_hash     TEXT NOT NULL,            -- sha256 of the embedded text: keys its vector in `embeddings`
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL
) STRICT;
CREATE INDEX knowledge_items_about ON knowledge_items(about_note_id, type) WHERE is_current = 1;
CREATE INDEX knowledge_items_source ON knowledge_items(source_type, source_id);
CREATE INDEX knowledge_items_source_note ON knowledge_items(source_note_id) WHERE source_note_id IS NOT NULL;
CREATE INDEX knowledge_items_statement ON knowledge_items(statement_hash);
CREATE INDEX knowledge_items_content_hash ON knowledge_items(content_hash);

CREATE TABLE knowledge_sources (
    item_id     INTEGER NOT NULL REFERENCES knowledge_items(item_id),
    source_type TEXT NOT NULL,
    source_id   TEXT NOT NULL,
    seen_at     TEXT NOT NULL,
    PRIMARY KEY (item_id, source_type, source_id)
) STRICT;

CREATE TABLE knowledge_decisions (
    decision_id INTEGER PRIMARY KEY,
    decided_at  TEXT NOT NULL,
    source_type TEXT NOT NULL,
    source_id   TEXT NOT NULL,
    proposal    TEXT NOT NULL,             -- JSON as received (invalid input as text)
    decision    TEXT NOT NULL CHECK (decision IN ('add', 'supersede', 'noop', 'card', 'invalid', 'update', 'stale')),
    reason      TEXT NOT NULL,
    item_id     INTEGER,                   -- the item added, superseded into, or corroborated
    card_id     INTEGER                    -- the curation card filed instead
) STRICT;
CREATE INDEX knowledge_decisions_item ON knowledge_decisions(item_id);

CREATE VIRTUAL TABLE knowledge_fts USING fts5(
    title, body, quote,
    content = '', contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 2'
);
