"""What only the database holds hangs on note_id; when a note's id changes, it moves along.

A rename keeps the note's id (the importer matches the new file to the vanished one), so
nothing moves then. An id changes when a note gains or loses a frontmatter `id`: the data
listed here follows it. Tables that hang on note_id never cascade from `notes` (a note is
rewritten as delete + insert on every change).
"""

from __future__ import annotations

import json

import apsw

from mindtui.store.curation_store import move_items


def move_note_data(conn: apsw.Connection, old: str, new: str) -> None:
    """Re-key the search pairs of `old` to `new` (weights of pairs both had are added), its
    curation cards, its place in logged search results and what was opened of it after searches
    (usage memory)."""
    if old == new:
        return
    move_items(conn, old, new)
    conn.execute("UPDATE main.search_opens SET note_id = ? WHERE note_id = ?", (new, old))
    # The logged results too: usage memory compares them with a new query's candidates, and
    # `usage forget` takes back the search pairs they taught by these ids.
    logged = conn.execute("SELECT search_id, results FROM main.search_log"
                          " WHERE EXISTS (SELECT 1 FROM json_each(results) WHERE value = ?)", (old,)).fetchall()
    conn.executemany("UPDATE main.search_log SET results = ? WHERE search_id = ?",
                     [(json.dumps(_renamed(json.loads(results), old, new)), search_id)
                      for search_id, results in logged])
    rows = conn.execute(
        "SELECT CASE WHEN note_a = ?1 THEN note_b ELSE note_a END, weight, last_seen FROM main.search_pairs"
        " WHERE note_a = ?1 OR note_b = ?1", (old,)).fetchall()
    conn.execute("DELETE FROM main.search_pairs WHERE note_a = ?1 OR note_b = ?1", (old,))
    conn.executemany(
        "INSERT INTO main.search_pairs (note_a, note_b, weight, last_seen) VALUES (min(?1, ?2), max(?1, ?2), ?3, ?4)"
        " ON CONFLICT(note_a, note_b) DO UPDATE SET weight = weight + excluded.weight,"
        " last_seen = max(last_seen, excluded.last_seen)",
        [(new, other, weight, seen) for other, weight, seen in rows if other != new])


def _renamed(results: list[str], old: str, new: str) -> list[str]:
    """A logged result list with `old` as `new` (kept once, at its best place, if both were there)."""
    out: list[str] = []
    for note_id in results:
        note_id = new if note_id == old else note_id
        if note_id not in out:
            out.append(note_id)
    return out
