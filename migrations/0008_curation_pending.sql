-- 0008: an answer that writes vault files is recorded (card state and undo record) before its files
-- are written, marked pending; once they are written the mark is cleared. A process killed in
-- between leaves the mark: the next answer, undo, refresh or import finishes the files (each only
-- if it still has what it had before the answer), so the vault and the database agree again.
-- While pending, files[].after holds the text to write (dropped when done).

ALTER TABLE curation_actions ADD COLUMN pending INTEGER NOT NULL DEFAULT 0;
CREATE INDEX curation_actions_pending ON curation_actions(action_id) WHERE pending = 1;
