-- 0004: the audience rule and cancellable jobs.
-- search_log.audience: who searched (owner or agent); agent queries are kept apart and never
--   teach search pairs. Existing rows were all the owner's.
-- notes.private_declared: the note's own frontmatter says private (notes.private is that OR a
--   folder in privacy.private_paths, recomputed when that setting changes).
-- notes.parsed_with: the parser/analyzer/type-registry fingerprint the note was written with; a
--   note written by other code is parsed again, so an interrupted import resumes where it stopped.
-- job_runs.status gains 'cancelled' (a step stopped at a safe point by its user).

ALTER TABLE search_log ADD COLUMN audience TEXT NOT NULL DEFAULT 'owner' CHECK (audience IN ('owner', 'agent'));

ALTER TABLE notes ADD COLUMN private_declared INTEGER NOT NULL DEFAULT 0;
UPDATE notes SET private_declared = private;
ALTER TABLE notes ADD COLUMN parsed_with TEXT NOT NULL DEFAULT '';
DELETE FROM meta WHERE key = 'import_fingerprint';  -- replaced by notes.parsed_with

CREATE TABLE job_runs_new (
    run_id     INTEGER PRIMARY KEY,
    batch_id   TEXT NOT NULL,               -- the steps of one job invocation share it
    job        TEXT NOT NULL,               -- nightly | index | ...
    step       TEXT NOT NULL,
    status     TEXT NOT NULL CHECK (status IN ('running','ok','failed','interrupted','cancelled')),
    started_at TEXT NOT NULL,
    ended_at   TEXT,
    report     TEXT NOT NULL DEFAULT '{}',  -- JSON: the step's counts and (at most 200) warnings
    error      TEXT
) STRICT;
INSERT INTO job_runs_new SELECT run_id, batch_id, job, step, status, started_at, ended_at, report, error FROM job_runs;
DROP TABLE job_runs;
ALTER TABLE job_runs_new RENAME TO job_runs;
CREATE INDEX job_runs_batch ON job_runs(batch_id);
