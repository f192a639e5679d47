"""A cold import's secondary indexes are built after its rows, not row by row.

Into an empty store every row of the notes, chunks, references, names and edges is an insert
into each of their indexes at a random place (hashed note ids, chunk keys, content hashes): at
100k notes those indexes outgrow any page cache and most inserts read pages back. Building an
index from the finished table sorts once. The indexes dropped are the ones migrations created
(`CREATE INDEX`); the keys a table declares itself (primary keys, UNIQUE) stay, so every
constraint holds while rows go in.

Crash safety: the drop and the list of what was dropped (meta, with each index's own SQL) are
one transaction, and building them again clears the list in one more. A run killed in between
leaves the list: the next import builds them first (`restore`), before it reads anything. Until
then every query is still right but slower; `mindtui status` says so (`owed`).
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Iterator

import apsw

from mindtui.store.batch import immediate
from mindtui.store.meta import get_meta, set_meta

DEFERRED_KEY = "deferred_indexes"  # meta: [[name, sql], ...] dropped for a bulk load, not yet built again
BULK_TABLES = ("notes", "chunks", "note_links", "note_names", "edges")  # what a note's import writes


def defer(conn: apsw.Connection, tables: tuple[str, ...] = BULK_TABLES) -> None:
    """Drop the secondary indexes of `tables`, remembering them (their SQL, in meta) for `restore`."""
    marks = ",".join("?" * len(tables))
    with immediate(conn):
        dropped = [list(row) for row in conn.execute(
            "SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL"
            f" AND tbl_name IN ({marks}) ORDER BY name", tables)]
        dropped += json.loads(get_meta(conn, DEFERRED_KEY) or "[]")  # left by a killed run: still owed
        for name, _ in dropped:
            conn.execute(f'DROP INDEX IF EXISTS "{name}"')
        set_meta(conn, DEFERRED_KEY, json.dumps(sorted(dropped)))


def owed(conn: apsw.Connection) -> list[str]:
    """The names of the indexes a killed bulk load left unbuilt (the next import builds them)."""
    return [name for name, _ in json.loads(get_meta(conn, DEFERRED_KEY) or "[]")]


def restore(conn: apsw.Connection) -> bool:
    """Build the indexes a bulk load dropped (a killed run's too); whether there were any."""
    if get_meta(conn, DEFERRED_KEY) is None:
        return False
    with immediate(conn):
        owed = json.loads(get_meta(conn, DEFERRED_KEY) or "[]")
        present = {name for (name,) in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'index'")}
        for name, sql in owed:
            if name not in present:
                conn.execute(sql)
        conn.execute("DELETE FROM meta WHERE key = ?", (DEFERRED_KEY,))
    return True


@contextmanager
def deferred(conn: apsw.Connection, enabled: bool) -> Iterator[None]:
    """Rows written inside go in without the secondary indexes (when `enabled`), built after,
    also when the writing stops with an error or a cancel (a kill: the next `restore`)."""
    if not enabled:
        yield
        return
    defer(conn)
    try:
        yield
    finally:
        restore(conn)
