"""Close notes as the nightly's link suggestions last looked them up (migration 0015), and the
notes whose lookup is due (note_vector_changes: a trigger adds every note whose vector was
written or removed; curation.close_notes adds their close notes).

A row (note, other, cosine) says `other` was among the nearest notes of `note` by note vector,
at a cosine of at least the floor of the lookup. The lookup's settings are in meta: other
settings make every row void (`start_over`).
"""

from __future__ import annotations

from typing import Iterable, Iterator

import apsw

from mindtui.store.meta import get_meta, set_meta
from mindtui.store.visibility import model_readable

# Both notes of a pair still readable by a model: a note turned `ai_processing: none` keeps its
# rows until the sweep removes its note vector (a failed or budget-stopped embed step), and no
# automatic step may suggest from it meanwhile.
_READABLE_PAIR = (" JOIN notes a ON a.note_id = p.note_id JOIN notes b ON b.note_id = p.other_id"
                  f" WHERE {model_readable('a')} AND {model_readable('b')}")

SETTINGS_KEY = "close_pairs"  # JSON: model, floor, neighbours of the rows written


def settings(conn: apsw.Connection) -> str | None:
    return get_meta(conn, SETTINGS_KEY)


def start_over(conn: apsw.Connection, settings_json: str) -> None:
    """Every row void: every note with a vector is due (the caller's transaction)."""
    conn.execute("DELETE FROM note_close_pairs")
    conn.execute("DELETE FROM note_vector_changes")
    conn.execute("INSERT INTO note_vector_changes (note_id, spread) SELECT note_id, 1 FROM note_embeddings")
    set_meta(conn, SETTINGS_KEY, settings_json)


def due_page(conn: apsw.Connection, limit: int) -> list[tuple[str, bool]]:
    """(note id, spread) of the next notes due, those whose own vector changed first (spread: their
    close notes are due too)."""
    return [(note_id, bool(spread)) for note_id, spread in conn.execute(
        "SELECT note_id, spread FROM note_vector_changes ORDER BY spread DESC, note_id LIMIT ?", (limit,))]


def due_count(conn: apsw.Connection) -> int:
    return conn.execute("SELECT count(*) FROM note_vector_changes").fetchone()[0]


def holders(conn: apsw.Connection, note_ids: list[str]) -> set[str]:
    """The notes whose rows name any of these as a close note."""
    if not note_ids:
        return set()
    return {row[0] for row in conn.execute(
        f"SELECT DISTINCT note_id FROM note_close_pairs WHERE other_id IN ({','.join('?' * len(note_ids))})",
        note_ids)}


def radii(conn: apsw.Connection, note_ids: list[str], neighbours: int) -> dict[str, float]:
    """Note -> the cosine of its farthest close note, for the notes that have `neighbours` of them
    (a note nearer than that takes a place; a note with fewer takes any note at the floor)."""
    if not note_ids:
        return {}
    return {note_id: low for note_id, low in conn.execute(
        "SELECT note_id, min(cosine) FROM note_close_pairs"
        f" WHERE note_id IN ({','.join('?' * len(note_ids))}) GROUP BY note_id HAVING count(*) >= ?",
        (*note_ids, neighbours))}


def mark_due(conn: apsw.Connection, note_ids: Iterable[str]) -> None:
    """Close notes of a changed one: due for their own lookup only (a note due already stays as it is)."""
    conn.executemany("INSERT OR IGNORE INTO note_vector_changes (note_id, spread) VALUES (?, 0)",
                     ((n,) for n in note_ids))


def write(conn: apsw.Connection, found: dict[str, dict[str, float]], gone: list[str]) -> None:
    """Each looked-up note's rows replaced by what its lookup found; the rows of notes with no
    vector any more (`gone`) taken out on both sides; the notes no longer due."""
    for note_id, others in found.items():
        conn.execute("DELETE FROM note_close_pairs WHERE note_id = ?", (note_id,))
        conn.executemany("INSERT INTO note_close_pairs (note_id, other_id, cosine) VALUES (?, ?, ?)",
                         ((note_id, other, cosine) for other, cosine in others.items()))
    for note_id in gone:
        conn.execute("DELETE FROM note_close_pairs WHERE note_id = ? OR other_id = ?", (note_id, note_id))
    conn.executemany("DELETE FROM note_vector_changes WHERE note_id = ?", ((n,) for n in [*found, *gone]))


def closest_first(conn: apsw.Connection) -> Iterator[tuple[str, str, float]]:
    """(a, b, cosine) with a < b, the closest pair first, each pair once (at the higher cosine of
    its two rows), read as the caller goes (a million notes have millions of pairs); pairs of
    notes a model may read only."""
    seen: set[tuple[str, str]] = set()
    for note_id, other_id, cosine in conn.execute(
            f"SELECT p.note_id, p.other_id, p.cosine FROM note_close_pairs p{_READABLE_PAIR} ORDER BY p.cosine DESC"):
        pair = (min(note_id, other_id), max(note_id, other_id))
        if pair not in seen:
            seen.add(pair)
            yield pair[0], pair[1], cosine


def cosines_of(conn: apsw.Connection, pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], float]:
    """The cosine of each of these pairs that is in a row either way round."""
    out = {}
    for a, b in pairs:
        row = conn.execute(f"SELECT max(p.cosine) FROM note_close_pairs p{_READABLE_PAIR} AND ((p.note_id = ? AND"
                           " p.other_id = ?) OR (p.note_id = ? AND p.other_id = ?))", (a, b, b, a)).fetchone()
        if row[0] is not None:
            out[(a, b)] = row[0]
    return out
