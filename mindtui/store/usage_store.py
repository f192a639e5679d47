"""Query functions for usage memory: the owner's opens after a search, and forgetting them.

Every statement names `main.` tables: the rows are the owner's. An agent's connection has a
`search_opens` view that shows nothing (store.visibility); when an agent may use the owner's
history (privacy.agent_uses_history) the memory reads `main.` rows joined with `notes`, which
that connection filters to the notes it may see.
"""

from __future__ import annotations

import datetime
import itertools
import json
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

import apsw

from mindtui.store.search_store import lower_search_watermark
from mindtui.text.names import exact_key

OPEN_WAYS = ("enter", "copy", "follow", "cli")


@dataclass(frozen=True)
class PastSearch:
    """An owner search that led to at least one open, with what was opened (note_id, opened_at)."""

    search_id: int
    searched_at: str
    query: str
    vector: bytes | None
    results: list[str]
    opens: list[tuple[str, str]]


def now_iso() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def record_open(conn: apsw.Connection, search_id: int, note_id: str, rank: int | None, how: str,
                opened_at: str | None = None) -> int:
    """One open of a note after an owner search; returns its open_id. A search of another
    audience (or none) is refused: only the owner teaches the memory."""
    if how not in OPEN_WAYS:
        raise ValueError(f"unknown way of opening {how!r}; one of {', '.join(OPEN_WAYS)}")
    with conn:
        row = conn.execute("SELECT audience FROM main.search_log WHERE search_id = ?", (search_id,)).fetchone()
        if row is None or row[0] != "owner":
            raise ValueError(f"search {search_id} is not an owner search in the log")
        conn.execute("INSERT INTO main.search_opens (search_id, note_id, rank, opened_at, how) VALUES (?, ?, ?, ?, ?)",
                     (search_id, note_id, rank, opened_at or now_iso(), how))
        return conn.last_insert_rowid()


def logged_results(conn: apsw.Connection, search_id: int) -> list[str] | None:
    """The results an owner search was logged with; None when there is no such owner search."""
    row = conn.execute("SELECT results FROM main.search_log WHERE search_id = ? AND audience = 'owner'",
                       (search_id,)).fetchone()
    return json.loads(row[0]) if row else None


def usage_stamp(conn: apsw.Connection) -> tuple:
    """Changes whenever an open is recorded or forgotten (what a cache of past searches keys on)."""
    return conn.execute("SELECT max(open_id), count(*), (SELECT max(search_id) FROM main.search_log)"
                        " FROM main.search_opens").fetchone()


def past_searches(conn: apsw.Connection, model_id: str | None, since: str | None = None) -> list[PastSearch]:
    """Owner searches with opens of notes this connection can see, oldest first. The vector is
    given only when it was made by `model_id` (another model's vectors compare to nothing)."""
    rows = conn.execute(
        "SELECT s.search_id, s.searched_at, s.query, CASE WHEN s.vector_model = ? THEN s.query_vector END,"
        " s.results, o.note_id, o.opened_at FROM main.search_opens o"
        " JOIN main.search_log s ON s.search_id = o.search_id JOIN notes n ON n.note_id = o.note_id"
        " WHERE s.audience = 'owner' AND (? IS NULL OR o.opened_at >= ?) ORDER BY s.search_id, o.open_id",
        (model_id, since, since))
    out: list[PastSearch] = []
    for search_id, group in itertools.groupby(rows, key=lambda r: r[0]):
        group = list(group)
        first = group[0]
        out.append(PastSearch(search_id, first[1], first[2], first[3], json.loads(first[4]),
                              [(r[5], r[6]) for r in group]))
    return out


def readable_notes(conn: apsw.Connection, note_ids: set[str]) -> set[str]:
    """Which of these notes this connection can see (`notes`: an agent's view hides what it may
    not see; a deleted note is in neither)."""
    return {row[0] for row in conn.execute(
        "SELECT note_id FROM notes WHERE note_id IN (SELECT value FROM json_each(?))", (json.dumps(sorted(note_ids)),))}


def owner_opens(conn: apsw.Connection) -> list[tuple[int, str, str, str, str, int | None]]:
    """Every open after an owner search, oldest first: (search_id, searched_at, query, mode, note_id, rank)."""
    return conn.execute(
        "SELECT s.search_id, s.searched_at, s.query, s.mode, o.note_id, o.rank FROM main.search_opens o"
        " JOIN main.search_log s ON s.search_id = o.search_id WHERE s.audience = 'owner'"
        " ORDER BY s.search_id, o.open_id").fetchall()


def open_count(conn: apsw.Connection) -> int:
    return conn.execute("SELECT count(*) FROM main.search_opens").fetchone()[0]


def forget_note_opens(conn: apsw.Connection, note_ids: list[str]) -> int:
    """The opens of these notes (a deleted note: what was learnt about it goes with it)."""
    removed = 0
    for note_id in note_ids:
        conn.execute("DELETE FROM main.search_opens WHERE note_id = ?", (note_id,))
        removed += conn.changes()
    return removed


def prune_opens(conn: apsw.Connection, before: str) -> dict:
    """privacy.usage_retention_days: opens older than `before` and the query vectors of owner
    searches older than it are forgotten; opens of notes no longer indexed too."""
    with conn:
        conn.execute("DELETE FROM main.search_opens WHERE opened_at < ?"
                     " OR note_id NOT IN (SELECT note_id FROM main.notes)", (before,))
        opens = conn.changes()
        conn.execute("UPDATE main.search_log SET query_vector = NULL, vector_model = NULL"
                     " WHERE searched_at < ? AND query_vector IS NOT NULL", (before,))
        vectors = conn.changes()
    return {"opens_forgotten": opens, "query_vectors_forgotten": vectors}


@contextmanager
def scrubbing(conn: apsw.Connection) -> Iterator[None]:
    """Deletes that leave nothing in the file (around a transaction, not inside one): with
    secure_delete SQLite overwrites a deleted row's bytes (by default a forgotten query stays
    readable in the page's free space and in freed pages until something overwrites them); then
    the write-ahead log, which still holds the pages as they were written, is copied back and
    emptied, unless a reader holds it."""
    previous = int(conn.execute("PRAGMA secure_delete").fetchone()[0])
    conn.execute("PRAGMA secure_delete = 1")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA secure_delete = {previous}")
    try:
        conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_TRUNCATE)
    except apsw.BusyError:  # a reader holds the log: the next checkpoint overwrites those pages
        return


def forget(conn: apsw.Connection, *, query: str | None = None, note_id: str | None = None,
           before: str | None = None, everything: bool = False) -> dict:
    """`mindtui usage forget`: the owner's searches matching every given condition (query: the
    same text, ignoring case, Unicode normalisation and runs of spaces; before: searched before
    that ISO time; everything: all) are removed with their opens and the search pairs they taught
    (everything: every pair, those of searches the retention already dropped from the log too);
    with only a note, that note's opens are removed and the searches stay. Returns counts."""
    with conn:
        if note_id is not None and query is None and before is None and not everything:
            conn.execute("DELETE FROM main.search_opens WHERE note_id = ?", (note_id,))
            return {"searches": 0, "opens": conn.changes(), "pairs_unlearnt": 0}
        where, args = ["audience = 'owner'"], []
        if before is not None:
            where.append("searched_at < ?")
            args.append(before)
        if note_id is not None:
            where.append("search_id IN (SELECT search_id FROM main.search_opens WHERE note_id = ?)")
            args.append(note_id)
        rows = conn.execute(f"SELECT search_id, results, query FROM main.search_log WHERE {' AND '.join(where)}",
                            args).fetchall()
        if query is not None:  # SQLite's lower() folds ASCII only: 'ÄRZTE' is 'ärzte' typed again
            key = exact_key(query)
            rows = [row for row in rows if exact_key(row[2]) == key]
        ids = [row[0] for row in rows]
        opens = 0
        for search_id in ids:
            conn.execute("DELETE FROM main.search_opens WHERE search_id = ?", (search_id,))
            opens += conn.changes()
            conn.execute("DELETE FROM main.search_log WHERE search_id = ?", (search_id,))
        if everything:  # only owner searches teach pairs (search_store.log_search)
            conn.execute("DELETE FROM main.search_pairs")
            pairs = conn.changes()
        else:
            pairs = _unlearn_pairs(conn, [json.loads(row[1]) for row in rows])
        lower_search_watermark(conn)
    return {"searches": len(ids), "opens": opens, "pairs_unlearnt": pairs}


def _unlearn_pairs(conn: apsw.Connection, result_lists: list[list[str]]) -> int:
    """Take back what forgotten searches taught the search graph: each pair among a search's
    results loses 1 (log_search added it); a pair at 0 is removed. Pairs already pruned stay gone."""
    counts: dict[tuple[str, str], int] = {}
    for results in result_lists:
        notes = sorted({n for n in results if not n.startswith("knowledge:")})
        for pair in itertools.combinations(notes, 2):
            counts[pair] = counts.get(pair, 0) + 1
    for (a, b), count in sorted(counts.items()):
        conn.execute("UPDATE main.search_pairs SET weight = weight - ? WHERE note_a = ? AND note_b = ?", (count, a, b))
    conn.execute("DELETE FROM main.search_pairs WHERE weight <= 0")
    return len(counts)
