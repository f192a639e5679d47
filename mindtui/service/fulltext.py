"""Full-text search without the service stack: the TUI's answers in the moments after launch.

Importing the whole service (graph, jobs, curation, knowledge, the importer, markdown-it) takes
~0.3 s idle and twice that on a loaded machine; a query typed at the first paint waited for it.
`FullText` needs only the search engine (numpy and sqlite-vec's Python package are not imported:
see mindtui.lazy_import): the owner's full-text answers from a read-only connection, by the same
engine, learnt values and audience rules as `Service.search(mode="fts")`, so they are the service's
answers, made without a model (no reranker: full text never waits for one). Only `FullText` and
`cached_engine` live here: importing this module must stay cheap (tests/test_fulltext.py checks).
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from mindtui.audience import Audience
from mindtui.config import Settings
from mindtui.search.engine import SearchEngine, SearchModels, SearchOptions, SearchResponse
from mindtui.search.fit import learnt_values
from mindtui.store.pool import ConnectionPool, PooledConnection


def cached_engine(pooled: PooledConnection, settings: Settings, learns: bool,
                  models: Callable[[], SearchModels | None]) -> SearchEngine:
    """The connection's search engine (one per connection: it caches title keys), made again when
    the values the nightly fit learnt (search.fit) changed. They apply where the user set nothing
    and are read on every search (one row of meta): a nightly that ran in a child process, or from
    cron, while this process lives is picked up when it has ended, not at the next start.
    learns False (an agent): no learnt values, they come from the owner's opens."""
    learnt = learnt_values(pooled.conn) if learns else {}
    cached = pooled.cache.get("engine")
    if cached is None or cached[0] != learnt:
        cached = pooled.cache["engine"] = (learnt, SearchEngine(pooled.conn, settings.with_learnt("search", learnt),
                                                                models()))
    return cached[1]


class FullText:
    """The owner's full-text search over the database, read-only (it never migrates, so an
    out-of-date file is a DatabaseError: then the service, which upgrades it, answers). The same
    two calls as the service's: search() and search_count()."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._pool = ConnectionPool(settings.db_path, audience=Audience.OWNER,
                                    busy_timeout_ms=settings.database.busy_timeout_ms,
                                    private_paths=settings.privacy.private_paths, read_only=True, max_connections=1)

    def search(self, query: str, options: SearchOptions) -> SearchResponse:
        """Service.search(query, options) of mode fts, never logged."""
        options = dataclasses.replace(options, mode="fts", log=False)
        with self._pool.connection() as pooled:
            return self._engine(pooled).search(query, options)

    def search_count(self, query: str, options: SearchOptions, at_most: int | None = None) -> int:
        with self._pool.connection() as pooled:
            return self._engine(pooled).count(query, options, at_most)

    def _engine(self, pooled: PooledConnection) -> SearchEngine:
        return cached_engine(pooled, self.settings, True, lambda: None)

    def close(self) -> None:
        self._pool.close()
