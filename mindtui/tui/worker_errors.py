"""A failed worker becomes an error notification, never a traceback on screen; a cancelled one
posts nothing.

Textual posts a worker's state change to the node that started it only (it does not bubble),
so every screen and the app mix this in.
"""

from __future__ import annotations

from textual.message import Message
from textual.worker import Worker, WorkerState, get_current_worker

from mindtui.errors import MindtuiError


def error_text(error: BaseException | None) -> str:
    if isinstance(error, MindtuiError):
        return str(error)
    return f"{type(error).__name__}: {error}"


class ReportsWorkerErrors:
    def post_unless_cancelled(self, message: Message) -> None:
        """From an exclusive worker: post its answer unless a newer worker of its group cancelled
        it. A thread worker runs on after cancel(); its answer, older than the newer one's, could
        arrive last and put the old state back (a resume's reload finishing after a save's)."""
        if not get_current_worker().is_cancelled:
            self.post_message(message)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state is WorkerState.ERROR:
            self.app.notify(error_text(event.worker.error), title="error", severity="error", timeout=8)
