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
with read-only connections of their own (one per thread and database, apsw's rule), which stop
on the caller's CancelToken (store.interrupt) and commit nothing. Each statement reads the file
as it is when it starts: a write between them (an import) can make one answer mix two states of
the index for one keystroke, as consecutive queries always could.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict

import apsw

from mindtui.store import fts_weightless, helper_threads
from mindtui.store.interrupt import stopping_on, token_of

# Below this many full-text rows one statement ranks (a thread's start costs more than it saves).
PARALLEL_MIN_ROWS = 200_000
THREADS = max(1, min(4, os.cpu_count() or 1))
_OPEN_PER_THREAD = 2  # databases a helper thread keeps a connection to (the last used)

Rows = list[tuple[int, float]]

_local = threading.local()


def ranked(conn: apsw.Connection, ranking: str, expression: str, limit: int) -> Rows:
    """The `limit` best rows of chunks_fts for a MATCH expression by `ranking` (SQL over
    chunks_fts, lower is better), as (rowid, score); on several threads when the table is large."""
    ranges = _ranges(conn)
    if len(ranges) < 2:
        return conn.execute(f"SELECT rowid, {ranking} AS score FROM chunks_fts WHERE chunks_fts MATCH ?"
                            " ORDER BY score LIMIT ?", (expression, limit)).fetchall()
    sql = (f"SELECT rowid, {ranking} AS score FROM chunks_fts WHERE chunks_fts MATCH ?"
           " AND rowid BETWEEN ? AND ? ORDER BY score LIMIT ?")
    cancel, path = token_of(conn), conn.filename
    threads = helper_threads.pool("fts", THREADS - 1)
    helpers = [threads.submit(_rank_range, path, sql, (expression, low, high, limit), cancel)
               for low, high in ranges[1:]]
    try:
        low, high = ranges[0]
        rows = conn.execute(sql, (expression, low, high, limit)).fetchall()
        for helper in helpers:
            rows += helper.result()
    finally:
        for helper in helpers:
            helper.cancel()  # those not started; a running one stops on the token, or finishes
    rows.sort(key=lambda row: (row[1], row[0]))
    return rows[:limit]


def _ranges(conn: apsw.Connection) -> list[tuple[int, int]]:
    """Rowid ranges of chunks_fts with about as many rows each, one per thread; one range (or
    none) for a small table or a database without a file (kept while the table is unchanged)."""
    state = fts_weightless.table_state(conn)
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


def _rank_range(path: str, sql: str, args: tuple, cancel) -> Rows:
    conn = _connection(path)
    with stopping_on(conn, cancel):
        return conn.execute(sql, args).fetchall()


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
