"""The owner's ranked full-text query of a large table on several threads, each a share of its rows.

FTS5's bm25 costs about 0.4 us a matching row (store.fts_split); a word in most of a million
chunks keeps one core busy for 0.3-0.6 s. Ranked over rowid ranges of equal row counts, on as many
threads as there are cores (up to THREADS), each range gives its best `limit` rows with the
scores the whole table gives them (bm25's idf and mean row length are the table's, whatever
range a statement reads), so the best `limit` of all of them is the whole query's answer: the
same rows in the same order (ties by rowid, as SQLite's sorter leaves them for one statement).
Measured at 1M chunks on 2 cores: 1.5-1.8x faster ("this" 311 -> 169 ms, "githu"* 520 -> 338 ms:
a prefix phrase is merged into one list on every thread).

The calling thread ranks the first range on its own connection; the others run on helper threads
with read-only connections of their own (one per thread and database path, apsw's rule), which
stop on the caller's CancelToken (store.interrupt), or when the caller is done, and commit
nothing. A helper whose table is in another state than the caller's (its structure record: a
write came between, or the file at the path was replaced) or that fails (a schema it may not
read) gives no rows, and the caller ranks in one statement. A write after that check can still
make one keystroke's answer mix two states of the index, as consecutive queries always could.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict

import apsw

from mindtui.errors import Cancelled, DatabaseError
from mindtui.progress import CancelToken
from mindtui.store import fts_weightless, helper_threads
from mindtui.store.interrupt import stopping_on, token_of

# Below this many full-text rows one statement ranks (a thread's start costs more than it saves).
PARALLEL_MIN_ROWS = 200_000
# The cores this process may run on (a CPU affinity or container limit counts, os.cpu_count not).
_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
THREADS = max(1, min(4, _CORES))
_OPEN_PER_THREAD = 2  # databases a helper thread keeps a connection to (the last used)

Rows = list[tuple[int, float]]

_local = threading.local()


def ranked(conn: apsw.Connection, ranking: str, expression: str, limit: int) -> Rows:
    """The `limit` best rows of chunks_fts for a MATCH expression by `ranking` (SQL over
    chunks_fts, lower is better), as (rowid, score); on several threads when the table is large."""
    whole = (f"SELECT rowid, {ranking} AS score FROM chunks_fts WHERE chunks_fts MATCH ?"
             " ORDER BY score LIMIT ?", (expression, limit))
    state = fts_weightless.table_state(conn)
    ranges = _ranges(conn, state)
    if len(ranges) < 2:
        return conn.execute(*whole).fetchall()
    sql = (f"SELECT rowid, {ranking} AS score FROM chunks_fts WHERE chunks_fts MATCH ?"
           " AND rowid BETWEEN ? AND ? ORDER BY score LIMIT ?")
    cancel, done, cookie = token_of(conn), CancelToken(), state.cookie
    threads = helper_threads.pool("fts", THREADS - 1)
    helpers = [threads.submit(_rank_range, conn.filename, cookie, sql, (expression, low, high, limit), cancel, done)
               for low, high in ranges[1:]]
    try:
        low, high = ranges[0]
        rows = conn.execute(sql, (expression, low, high, limit)).fetchall()
        for helper in helpers:
            part = helper.result()
            if part is None:  # that thread read another state of the table (or none): one statement
                return conn.execute(*whole).fetchall()
            rows += part
    finally:
        done.cancel()  # a helper still running stops (a search cancelled, or one that failed)
        for helper in helpers:
            helper.cancel()
    rows.sort(key=lambda row: (row[1], row[0]))
    return rows[:limit]


def _ranges(conn: apsw.Connection, state=None) -> list[tuple[int, int]]:
    """Rowid ranges of chunks_fts (in its table `state`, fts_weightless.table_state: read when not
    given) with about as many rows each, one per thread; none for a small table or a database
    without a file (kept while the table is unchanged)."""
    state = state or fts_weightless.table_state(conn)
    parts = THREADS if state.rows >= PARALLEL_MIN_ROWS and conn.filename else 1
    if parts < 2:
        return []
    found = state.shares.get(parts)
    if found is None:
        # The docsize table has a row per full-text row, in rowid order: a range's first rowid
        # is an offset into it (~35 ms for the middle of 1.2M rows, once per table state).
        starts = [conn.execute("SELECT id FROM chunks_fts_docsize ORDER BY id LIMIT 1 OFFSET ?",
                               (state.rows * part // parts,)).fetchone() for part in range(parts)]
        bounds = [row[0] for row in starts if row is not None]
        found = [(low, high - 1) for low, high in zip(bounds, bounds[1:])] + [(bounds[-1], 2**63 - 1)]
        found[0] = (-2**63, found[0][1])
        state.shares[parts] = found
    return found


def _rank_range(path: str, cookie: bytes | None, sql: str, args: tuple, cancel: CancelToken | None,
                done: CancelToken) -> Rows | None:
    """A range's rows on this thread's connection; None when it cannot answer as the caller's
    would: its table is in another state (a write between the two, or another file at the path
    now), or it failed (the caller ranks in one statement). Stops when either token is cancelled."""
    stop = _Either(cancel, done)
    try:
        conn = _connection(path)
        if fts_weightless.table_state(conn).cookie != cookie:
            _forget(path)  # the next search opens the file at the path again
            return None
        with stopping_on(conn, stop):
            return conn.execute(sql, args).fetchall()
    except Cancelled:
        if cancel is not None and cancel.cancelled:
            raise  # the search's own cancel: the caller stops too
        return None  # the caller is done with it
    except (apsw.Error, DatabaseError):
        _forget(path)
        return None


class _Either(CancelToken):
    """Cancelled when either token is."""

    def __init__(self, first: CancelToken | None, second: CancelToken) -> None:
        super().__init__()
        self._tokens = [t for t in (first, second) if t is not None]

    @property
    def cancelled(self) -> bool:
        return any(t.cancelled for t in self._tokens)

    def check(self) -> None:
        if self.cancelled:
            raise Cancelled("cancelled")


def _forget(path: str) -> None:
    conn = _local.__dict__.get("opened", {}).pop(path, None)
    if conn is not None:
        conn.close()


def _connection(path: str) -> apsw.Connection:
    """This helper thread's read-only connection to the database at `path`."""
    from mindtui.store.connection import open_database  # connection imports the store's modules

    opened: OrderedDict = _local.__dict__.setdefault("opened", OrderedDict())
    conn = opened.get(path)
    if conn is None:
        conn = opened[path] = open_database(path, readonly=True)
        while len(opened) > _OPEN_PER_THREAD:
            opened.popitem(last=False)[1].close()
    opened.move_to_end(path)
    return conn
