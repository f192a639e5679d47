-- 0021: a counter that moves whenever a note is added, removed, renamed, retitled, given other
-- aliases or other privacy flags: what an agent may call a note by. The service keeps the names
-- of the notes an agent sees (service.redact) until it moves; PRAGMA data_version moves with every
-- commit of any connection (each of the owner's searches logs itself), and listing the names takes
-- ~4 s at 191,505 notes.

INSERT OR IGNORE INTO meta(key, value) VALUES ('notes_generation', '0');

CREATE TRIGGER notes_generation_insert AFTER INSERT ON notes BEGIN
    UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'notes_generation';
END;

CREATE TRIGGER notes_generation_delete AFTER DELETE ON notes BEGIN
    UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'notes_generation';
END;

CREATE TRIGGER notes_generation_update AFTER UPDATE OF path, title, aliases, private, ai_processing ON notes BEGIN
    UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'notes_generation';
END;
