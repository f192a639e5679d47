"""Connections for a long-lived, multi-threaded process (the service under the TUI and MCP).

apsw connections must not be used by two threads at once, and Textual starts a new thread
for every worker, so a connection per thread would leak one per keystroke. The pool hands a
connection to one thread at a time and takes it back afterwards; each pooled connection
carries a small `cache` dict for state that belongs to it (a search engine and its title
keys, which are valid per connection because `PRAGMA data_version` is).

Bounded: at most MAX_CONNECTIONS exist (each costs an open: sqlite-vec, the schema check, an
agent's views); a thread asking when all are in use waits for one (up to the busy timeout, as
SQLite waits for a lock). A thread holds at most one: asking again while it holds one (a
service call inside another) gets the same connection. `close()` closes them all (one in use
when its thread hands it back).

A failure of the file or the disk inside `connection()` (apsw's ReadOnly, Full, IOError, ...)
leaves it as the one-line DatabaseError of `failures.store_failure`.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from mindtui.audience import Audience
from mindtui.errors import DatabaseError
from mindtui.store.batch import rollback_open_transaction
from mindtui.store.connection import DatabaseLockedError, open_database
from mindtui.store.failures import store_errors

MAX_CONNECTIONS = 8


@dataclass
class PooledConnection:
    conn: object  # apsw.Connection
    cache: dict = field(default_factory=dict)


@dataclass
class _Held:
    pooled: PooledConnection
    depth: int = 1


class ConnectionPool:
    def __init__(self, path: Path, *, audience: Audience, busy_timeout_ms: int,
                 private_paths: tuple[str, ...] = (), agent_history: bool = False, read_only: bool = False,
                 max_connections: int = MAX_CONNECTIONS) -> None:
        self.path = Path(path)
        self.audience = audience
        self.private_paths = tuple(private_paths)
        self.agent_history = agent_history
        self.busy_timeout_ms = busy_timeout_ms
        self.read_only = read_only
        self.max_connections = max_connections
        self._cond = threading.Condition()  # guards the fields below
        self._idle: list[PooledConnection] = []
        self._count = 0  # connections that exist: idle and in use
        self._waiting = 0
        self._held: dict[int, _Held] = {}  # thread id -> the connection it holds
        self._closed = False

    def _open(self) -> PooledConnection:
        if not self.path.exists():
            raise DatabaseError(f"{self.path}: no such database (run `mindtui index VAULT --db {self.path}` first)")
        return PooledConnection(open_database(self.path, busy_timeout_ms=self.busy_timeout_ms, readonly=self.read_only,
                                              audience=self.audience, private_paths=self.private_paths,
                                              agent_history=self.agent_history))

    def _take(self) -> PooledConnection:
        deadline = time.monotonic() + self.busy_timeout_ms / 1000
        with self._cond:
            while True:
                if self._closed:
                    raise DatabaseError(f"{self.path}: the service was closed")
                if self._idle:
                    return self._idle.pop()
                if self._count < self.max_connections:
                    self._count += 1
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise DatabaseLockedError(
                        f"{self.path}: all {self.max_connections} database connections of this process stayed "
                        f"busy for {self.busy_timeout_ms} ms (database.busy_timeout_ms); try again")
                self._waiting += 1
                try:
                    self._cond.wait(remaining)
                finally:
                    self._waiting -= 1
        try:
            return self._open()
        except BaseException:
            with self._cond:
                self._count -= 1
                self._cond.notify()
            raise

    def _give_back(self, pooled: PooledConnection) -> None:
        rollback_open_transaction(pooled.conn)  # an exception inside a manual transaction
        with self._cond:
            keep = not self._closed
            if keep:
                self._idle.append(pooled)
            else:
                self._count -= 1
            self._cond.notify()
        if not keep:
            pooled.conn.close()

    @contextmanager
    def connection(self) -> Iterator[PooledConnection]:
        me = threading.get_ident()
        with self._cond:
            held = self._held.get(me)
            if held is not None:
                held.depth += 1
        if held is None:
            held = _Held(self._take())
            with self._cond:
                self._held[me] = held
        try:
            with store_errors(self.path):
                yield held.pooled
        finally:
            with self._cond:
                held.depth -= 1
                last = held.depth == 0
                if last:
                    del self._held[me]
            if last:
                self._give_back(held.pooled)

    def stats(self) -> dict[str, int]:
        """How many connections exist, lie idle, and how many threads wait for one."""
        with self._cond:
            return {"open": self._count, "idle": len(self._idle), "waiting": self._waiting}

    def close(self) -> None:
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._count -= len(idle)
            self._cond.notify_all()
        for pooled in idle:
            pooled.conn.close()
