"""How long work reports progress and is cancelled: shared by the importer, the embedding
sweep, the job runner, the service and every front end.
"""

from __future__ import annotations

import threading
from typing import Callable

from mindtui.errors import Cancelled

# (done, total, detail): one unit of work finished (a note, a chunk text, a query).
Progress = Callable[[int, int, str], None]
# (step, done, total, detail): the same, naming the job step it belongs to.
StepProgress = Callable[[str, int, int, str], None]


def no_progress(done: int, total: int, detail: str) -> None:
    return None


class CancelToken:
    """Set by a front end (a key in the TUI, SIGINT in the CLI); long work checks it at safe
    points (between committed batches) and stops there with `Cancelled`."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        if self._event.is_set():
            raise Cancelled("cancelled; everything committed so far is kept, the next run continues")


NEVER_CANCELLED = CancelToken()
