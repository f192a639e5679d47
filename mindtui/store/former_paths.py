"""The paths notes had before a rename (migration 0022): which note a link's old name meant."""

from __future__ import annotations

import apsw


def remember(conn: apsw.Connection, former_path: str, note_id: str, previous_id: str) -> None:
    """`former_path` was the note now `note_id` (inside the import's transaction); the note's
    earlier former paths follow it when its id changed with the rename."""
    if previous_id != note_id:
        conn.execute("UPDATE note_former_paths SET note_id = ? WHERE note_id = ?", (note_id, previous_id))
    conn.execute("INSERT OR REPLACE INTO note_former_paths(path, note_id) VALUES (?, ?)", (former_path, note_id))


def prune(conn: apsw.Connection) -> None:
    """Forget the former paths of notes that are gone and those a note has again."""
    if conn.execute("SELECT 1 FROM note_former_paths LIMIT 1").fetchone() is None:
        return  # no rename remembered (a cold import): a delete would scan the notes for nothing
    conn.execute("DELETE FROM note_former_paths WHERE note_id NOT IN (SELECT note_id FROM notes)"
                 " OR path IN (SELECT path FROM notes)")


def all_former_paths(conn: apsw.Connection) -> list[tuple[str, str, str, str]]:
    """(former path, note id, its path now, its title) of every rename remembered of a note that
    exists: few, a row a rename."""
    return list(conn.execute("SELECT f.path, n.note_id, n.path, n.title FROM note_former_paths f"
                             " JOIN notes n ON n.note_id = f.note_id ORDER BY f.path"))
