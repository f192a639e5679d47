"""Connections for a long-lived, multi-threaded process (the service under the TUI and MCP).

apsw connections must not be used by two threads at once, and Textual starts a new thread
for every worker, so a connection per thread would leak one per keystroke. The pool hands a
connection to one thread at a time and takes it back afterwards; each pooled connection
carries a small `cache` dict for state that belongs to it (a search engine and its title
keys, which are valid per connection because `PRAGMA data_version` is).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import apsw

from mindtui.audience import Audience
from mindtui.errors import DatabaseError
from mindtui.store.batch import rollback_open_transaction
from mindtui.store.connection import open_database

MAX_IDLE = 8


@dataclass
class PooledConnection:
    conn: apsw.Connection
    cache: dict = field(default_factory=dict)


class ConnectionPool:
    def __init__(self, path: Path, *, audience: Audience, busy_timeout_ms: int,
                 private_paths: tuple[str, ...] = ()) -> None:
        self.path = Path(path)
        self.audience = audience
        self.private_paths = tuple(private_paths)
        self.busy_timeout_ms = busy_timeout_ms
        self._idle: list[PooledConnection] = []
        self._lock = threading.Lock()
        self._closed = False

    def _open(self) -> PooledConnection:
        if not self.path.exists():
            raise DatabaseError(f"{self.path}: no such database (run `mindtui index VAULT --db {self.path}` first)")
        return PooledConnection(open_database(self.path, busy_timeout_ms=self.busy_timeout_ms,
                                              audience=self.audience, private_paths=self.private_paths))

    @contextmanager
    def connection(self) -> Iterator[PooledConnection]:
        with self._lock:
            if self._closed:
                raise DatabaseError(f"{self.path}: the service was closed")
            pooled = self._idle.pop() if self._idle else None
        if pooled is None:
            pooled = self._open()
        try:
            yield pooled
        finally:
            rollback_open_transaction(pooled.conn)  # an exception inside a manual transaction
            with self._lock:
                keep = not self._closed and len(self._idle) < MAX_IDLE
                if keep:
                    self._idle.append(pooled)
            if not keep:
                pooled.conn.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for pooled in idle:
            pooled.conn.close()
