-- 0019: the notes the stored flags hide from agents (private, or `ai_processing: none`), found
-- without reading every note. An agent's view of the links that resolve to one of them, and the
-- anchor rows built for agents, start from these few (store.visibility, store.anchors): a vault
-- with an `index.md` in each of 1,000 folders has 3,000 links whose later rules name other notes,
-- and reading them all made each of an agent's edges queries take 2 ms instead of 0.02.

CREATE INDEX IF NOT EXISTS notes_hidden ON notes(note_id) WHERE private = 1 OR ai_processing = 0;

-- The links whose later rules may resolve them to one note: not '[]' (none) nor '[[]]' (many
-- notes: ambiguous). With the reader's own privacy.private_paths, an agent's edges read these.
CREATE INDEX IF NOT EXISTS note_links_fallback_named ON note_links(note_id) WHERE fallback NOT IN ('[]', '[[]]');
