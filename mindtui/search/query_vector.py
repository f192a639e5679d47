"""The query's vector for one search: embedded once, and early, beside the full-text query.

A hybrid search used to embed its query (llama.cpp, ~10 ms) and scan the code index for its
vector candidates (~40 ms at 1M chunks) after the full-text query, one after the other. Both
let go of the GIL, and so does apsw while SQLite runs: `start()` runs them in a thread of its
own while the full-text query runs, and the vector list joins it when it needs the vector.
Only the embedder and the codes in memory are touched there: a connection stays on its thread
(apsw), so what reads the database (has the model vectors? how many items?) is done before.
The notices and the vector are the ones the search got when it embedded on demand.
"""

from __future__ import annotations

import threading
from typing import Callable

import apsw

from mindtui.errors import ModelUnavailableError
from mindtui.store import search_store as store
from mindtui.store.meta import EMBED_REMAINING_KEY, get_meta
from mindtui.store.vectors import CandidateScan, ScannedCandidates

EMBEDDING_THREAD = "mindtui-query-embedding"
NO_VECTORS_NOTICE = "no vectors yet (run `mindtui embed`); full-text results only"


class QueryVector:
    """(model id, the query's vector), or None with a notice saying why there is none; computed
    on the first call (or by `start()`), then kept (`done`, `value`). `scanned`: the code index's
    candidates for it, when `start()` was given a scan."""

    def __init__(self, conn: apsw.Connection, models, owner: bool, query: str, wait: bool,
                 notices: list[str]) -> None:
        self.conn, self.models, self.owner, self.query, self.wait = conn, models, owner, query, wait
        self.notices = notices
        self.done, self.value = False, None
        self.scanned: ScannedCandidates | None = None
        self._pending: _Embedding | None = None
        self._started = False

    def start(self, scan_for: Callable[[str], CandidateScan | None]) -> None:
        """Begin the embedding in a thread; `scan_for(model id)` (on this thread): the code index
        scan to run with the vector, or None."""
        if not self._started and not self.done:
            self._started = True
            self._pending = self._begin(scan_for)

    def __call__(self):
        if not self.done:
            pending = self._pending if self._started else self._begin(None)
            self.value, self.done = self._finish(pending), True
        return self.value

    def _begin(self, scan_for: Callable[[str], CandidateScan | None] | None) -> _Embedding | None:
        notices = self.notices
        if self.models is None:
            notices.append("vector search unavailable: no embedding model configured; full-text results only")
            return None
        try:
            # Before the model: loading it (seconds, for each CLI search) gives nothing to compare with.
            if not store.has_vectors(self.conn):
                notices.append(NO_VECTORS_NOTICE)
                return None
            embedder = self.models.embedder(wait=self.wait)
            if embedder is None:
                notices.append("the embedding model is loading; full-text results for now")
                return None
            if not store.has_vectors(self.conn, embedder.model_id):
                notices.append(NO_VECTORS_NOTICE)
                return None
            # The owner's only: counted over every note, it would tell an agent of hidden ones.
            remaining = get_meta(self.conn, EMBED_REMAINING_KEY) if self.owner else None
            if remaining and remaining != "0":
                notices.append(f"{remaining} passages are not embedded yet (the next embedding run continues); "
                               "they are found by their words only")
            if scan_for is None:
                return _Embedding(embedder, embedder.embed_query(self.query))
            return _Embedding.in_thread(embedder, self.query, scan_for(embedder.model_id))
        except Exception as exc:  # a broken model or llama.cpp mid-query: a notice (see _failed)
            self._failed(exc)
            return None

    def _finish(self, pending: _Embedding | None):
        if pending is None:
            return None
        try:
            vector, self.scanned = pending.result()
        except Exception as exc:  # what the thread raised: a notice, as when embedded here
            self._failed(exc)
            return None
        return pending.embedder.model_id, vector

    def _failed(self, exc: Exception) -> None:
        if not self.owner:  # the reason names files of the owner's machine (the model's path): theirs to read
            self.notices.append("vector search unavailable (the embedding model cannot be used; `mindtui status` "
                                "tells the owner why); full-text results only")
        elif isinstance(exc, ModelUnavailableError):
            self.notices.append(f"vector search unavailable ({exc}); full-text results only")
        else:  # a llama.cpp failure mid-query must not take the search down with it
            self.notices.append(f"vector search failed ({type(exc).__name__}: {exc}); full-text results only")


class _Embedding:
    """An embedding done (`_Embedding(embedder, vector)`) or running in a thread of its own."""

    def __init__(self, embedder, vector=None) -> None:
        self.embedder = embedder
        self._outcome: tuple = (vector, None)
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    @classmethod
    def in_thread(cls, embedder, query: str, scan: CandidateScan | None) -> _Embedding:
        running = cls(embedder)

        def work() -> None:
            try:
                vector = embedder.embed_query(query)
                running._outcome = (vector, scan(vector) if scan is not None else None)
            except BaseException as exc:  # handed to the joining search, which tells it (result())
                running._error = exc

        # A daemon: a search that failed before joining must not keep the process from ending.
        running._thread = threading.Thread(target=work, name=EMBEDDING_THREAD, daemon=True)
        running._thread.start()
        return running

    def result(self) -> tuple:
        """(the vector, its scanned candidates or None); raises what the embedding raised."""
        if self._thread is not None:
            self._thread.join()
        if self._error is not None:
            raise self._error
        return self._outcome
