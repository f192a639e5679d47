"""Group many small writes into few transactions without losing crash safety.

Each item (a note, a deletion) is consistent on its own; a transaction holds several and
commits after `max_items` or `max_seconds`, whichever comes first. A kill loses at most the
open group, which the next run redoes, so the result equals one clean run. The time bound
keeps the write lock short, so a search logging itself from another thread never waits long.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Iterator

import apsw

from mindtui.progress import CancelToken


class WriteBatches:
    def __init__(self, conn: apsw.Connection, max_items: int, max_seconds: float,
                 cancel: CancelToken | None = None) -> None:
        self.conn = conn
        self.max_items = max_items
        self.max_seconds = max_seconds
        self.cancel = cancel
        self._items = 0
        self._started = 0.0
        self._open = False

    def _begin(self) -> None:
        # IMMEDIATE takes the write lock up front: no deadlock upgrading a read to a write.
        self.conn.execute("BEGIN IMMEDIATE")
        self._open, self._items, self._started = True, 0, time.monotonic()

    def item_done(self) -> None:
        """Call after each item; commits when the group is full or old enough."""
        self._items += 1
        if self._items >= self.max_items or time.monotonic() - self._started >= self.max_seconds:
            self.commit()

    @property
    def in_transaction(self) -> bool:
        return self._open

    def commit(self) -> None:
        if self._open:
            self.conn.execute("COMMIT")
            self._open = False

    def ensure_open(self) -> None:
        """Before an item's writes. A cancelled run stops here, between items: what is done is
        committed first, then Cancelled is raised."""
        if self.cancel is not None and self.cancel.cancelled:
            self.commit()
            self.cancel.check()
        if not self._open:
            self._begin()


@contextmanager
def write_batches(conn: apsw.Connection, max_items: int = 100, max_seconds: float = 0.1,
                  cancel: CancelToken | None = None) -> Iterator[WriteBatches]:
    """`batches.ensure_open()` before an item's writes, `batches.item_done()` after them."""
    batches = WriteBatches(conn, max_items, max_seconds, cancel)
    try:
        yield batches
    except BaseException:
        if batches._open:
            rollback_open_transaction(conn)  # SQLite ended it already after a full disk or an I/O error
            batches._open = False
        raise
    batches.commit()


@contextmanager
def pragma_while(conn: apsw.Connection, name: str, value: int) -> Iterator[apsw.Connection]:
    """An integer PRAGMA set for the block, the connection's own value given back after."""
    (before,) = conn.execute(f"PRAGMA {name}").fetchone()
    conn.execute(f"PRAGMA {name} = {int(value)}")
    try:
        yield conn
    finally:
        conn.execute(f"PRAGMA {name} = {int(before)}")


def page_cache(conn: apsw.Connection, mebibytes: int):
    """A larger page cache for a bulk write (SQLite's default is 2 MB): at 100k notes the random
    inserts into the edge, reference and chunk indexes otherwise miss it on most rows."""
    return pragma_while(conn, "cache_size", -int(mebibytes) * 1024)


def wal_checkpoints_every(conn: apsw.Connection, pages: int):
    """Fewer, larger WAL checkpoints for a bulk write (SQLite's default: every 1,000 pages). Each
    checkpoint copies the pages committed since the last one into the database file and syncs it:
    the index and full-text pages a long import rewrites again and again are copied once per
    checkpoint, so a cold import of 10k notes spent 1.5 of its 16 CPU seconds on them. The
    write-ahead log grows to about `pages` pages; what a kill leaves is as safe as before."""
    return pragma_while(conn, "wal_autocheckpoint", pages)


@contextmanager
def immediate(conn: apsw.Connection) -> Iterator[apsw.Connection]:
    """One transaction that reads before it writes. BEGIN IMMEDIATE takes the write lock first
    (waiting up to the busy timeout): a deferred transaction that read and then wants to write
    fails at once with "database is locked" when another connection committed in between.
    Inside a transaction already (a caller's), a savepoint of it: the caller's BEGIN decided the lock."""
    if conn.in_transaction:
        with conn:
            yield conn
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        rollback_open_transaction(conn)  # SQLite ended it already after a full disk or an I/O error
        raise
    conn.execute("COMMIT")


def rollback_open_transaction(conn: apsw.Connection) -> None:
    """End a transaction that failed work left open (what it wrote is not kept)."""
    if conn.in_transaction:
        conn.execute("ROLLBACK")
