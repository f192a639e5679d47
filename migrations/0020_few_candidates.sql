-- 0020: the ambiguous links among at most 16 notes (store.visibility.LINK_NOTES_MAX). Only these
-- can resolve for an agent (to the one it may see) or give a line to an anchor row: an ambiguous
-- link among more stays ambiguous to every reader. An agent's edges, and the anchor rows, read
-- these instead of every ambiguous link's candidates: 300 notes linking [[index]] and [[n0]] in a
-- vault with an index.md and an n0.md in each of 1,000 folders took each edges query 246 ms.

CREATE INDEX IF NOT EXISTS note_links_ambiguous_few ON note_links(note_id)
    WHERE resolution = 'ambiguous' AND json_array_length(candidates) <= 16;
