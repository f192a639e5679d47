-- 0005: the curation queue and its undo log.
-- curation_items: one card per cause (kind + subject_key), filled by the import and the nightly
--   graph step, answered by the owner (TUI, `mindtui curate`). Only the database holds the answers:
--   a rebuild from the vault must never drop them. A card is never deleted; it is resolved,
--   dismissed or snoozed, and a card the owner answered never comes back for the same subject.
-- curation_actions: every answer, with what it changed in the vault, so `undo` can reverse the
--   last one (file bytes and card state), also from another process.

CREATE TABLE curation_items (
    item_id       INTEGER PRIMARY KEY,
    kind          TEXT NOT NULL,           -- unresolved_link | ambiguous_link | link_suggestion | mass_edit | ...
    subject_key   TEXT NOT NULL,           -- the cause's identity within the kind (JSON, note ids not paths:
                                           -- it survives renames), e.g. {"note": id, "target": "name"}
    note_id       TEXT,                    -- the subject note (no foreign key: the card outlives the note)
    payload       TEXT NOT NULL DEFAULT '{}',  -- JSON: what the card shows (paths, lines, evidence, scores)
    importance    REAL NOT NULL DEFAULT 0 CHECK (importance >= 0 AND importance <= 1),  -- queue order
    status        TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'resolved', 'dismissed', 'snoozed')),
    answer        TEXT,                    -- JSON: the action taken ({"by": "owner", "action": ...}) or
                                           -- {"by": "auto", "reason": ...} when the cause disappeared
    snoozed_until TEXT,                    -- ISO time a snoozed card opens again
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,           -- last change of payload, importance or status
    resolved_at   TEXT,                    -- when it was resolved or dismissed (NULL while open or snoozed)
    UNIQUE (kind, subject_key)
) STRICT;
CREATE INDEX curation_items_queue ON curation_items(status, importance DESC);
CREATE INDEX curation_items_note ON curation_items(note_id);

CREATE TABLE curation_actions (
    action_id          INTEGER PRIMARY KEY,
    item_id            INTEGER NOT NULL REFERENCES curation_items(item_id),
    action             TEXT NOT NULL,          -- the kind's action name (create, retarget, accept, ...)
    args               TEXT NOT NULL DEFAULT '{}',  -- JSON: the action's arguments (target note id, days)
    done_at            TEXT NOT NULL,
    files              TEXT NOT NULL DEFAULT '[]',  -- JSON [{path, before, after_sha256}]: vault-relative
                                               -- path, the text before (null: the file did not exist),
                                               -- the sha256 of what the action wrote (undo checks it)
    prev_status        TEXT NOT NULL,          -- the card as it was before, restored by undo
    prev_answer        TEXT,
    prev_snoozed_until TEXT,
    undone             INTEGER NOT NULL DEFAULT 0,  -- 1: reversed by undo (never undone twice)
    undone_at          TEXT
) STRICT;
CREATE INDEX curation_actions_item ON curation_actions(item_id);
