"""A failed worker becomes an error notification, never a traceback on screen.

Textual posts a worker's state change to the node that started it only (it does not bubble),
so every screen and the app mix this in.
"""

from __future__ import annotations

from textual.worker import Worker, WorkerState

from mindtui.errors import MindtuiError


def error_text(error: BaseException | None) -> str:
    if isinstance(error, MindtuiError):
        return str(error)
    return f"{type(error).__name__}: {error}"


class ReportsWorkerErrors:
    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state is WorkerState.ERROR:
            self.app.notify(error_text(event.worker.error), title="error", severity="error", timeout=8)
