"""Full-text answers in the first moments after launch, before the service is open.

The app imports the service stack in a worker after the first paint (see tui.lazy): ~0.3 s idle,
0.45-0.7 s on a loaded machine. A query typed at the first paint is answered meanwhile by the
lean full-text search of service.fulltext (the service's own fts answers, without its stack),
and the service's import waits for those answers: two threads importing and searching at once
share one interpreter lock and each took twice as long.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

from mindtui.config import Settings
from mindtui.tui.lazy import service_api


class EarlySearch:
    def __init__(self, settings: Settings, service_ready: threading.Event) -> None:
        self.settings = settings
        self.service_ready = service_ready
        self._full_text = None  # service.fulltext.FullText, opened on first use
        self._busy = 0  # searches running on it
        self._failed = False  # it could not open the database: the service answers every search
        self._changed = threading.Condition()

    def search(self, query: str, options):
        """The response, or None once the service is open or when the lean search cannot open
        the database (none yet, one to upgrade): then the service answers. Workers only."""
        return self._lean(lambda lean: lean.search(query, options))

    def count(self, query: str, options, at_most: int):
        """search_count (up to at_most + 1), or None as search() says."""
        return self._lean(lambda lean: lean.search_count(query, options, at_most))

    def _lean(self, call):
        with self._busy_while():
            lean = self._open()
            if lean is None:
                return None
            try:
                return call(lean)
            except service_api().DatabaseError:
                self._failed = True
                self.close()
                return None

    def _open(self):
        if self.service_ready.is_set() or self._failed:
            return None
        with self._changed:
            if self._full_text is None:
                from mindtui.service.fulltext import FullText

                self._full_text = FullText(self.settings)
            return self._full_text

    @contextmanager
    def _busy_while(self):
        with self._changed:
            self._busy += 1
        try:
            yield
        finally:
            with self._changed:
                self._busy -= 1
                self._changed.notify_all()

    def prepare(self) -> None:
        """Before the service's import (its worker): the lean search's own modules, then until no
        search typed meanwhile runs (one typed at the first paint has its answer first)."""
        import mindtui.service.fulltext  # noqa: F401  (shared with the searches: whoever comes first imports)

        with self._changed:
            self._changed.wait_for(lambda: self._busy == 0)

    def close(self) -> None:
        with self._changed:
            lean, self._full_text = self._full_text, None
        if lean is not None:
            lean.close()  # a search in progress on it ends first (the pool closes its connection then)
