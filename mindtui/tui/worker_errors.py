"""Errors become notifications, never a traceback on screen or a dead app.

A failed worker becomes an error notification; a cancelled one posts nothing. Textual posts a
worker's state change to the node that started it only (it does not bubble), so every screen
and the app mix ReportsWorkerErrors in.

An exception in a handler or an action is caught where Textual dispatches the message
(SurvivesErrors): Textual would end that node's message loop, which for a screen leaves it
deaf and for the app ends the app. The node goes on with its next message instead; the app
shows the error and keeps its traceback for stderr at exit (`MindtuiApp.errors`).
"""

from __future__ import annotations

import traceback

from textual.message import Message
from textual.worker import Worker, WorkerState, get_current_worker

from mindtui.errors import MindtuiError


def error_text(error: BaseException | None) -> str:
    if isinstance(error, MindtuiError):
        return str(error)
    return f"{type(error).__name__}: {error}"


class SurvivesErrors:
    async def _dispatch_message(self, message: Message) -> None:
        try:
            await super()._dispatch_message(message)
        except Exception as error:  # CancelledError is a BaseException: shutdown still works
            report = getattr(self.app, "report_error", None)
            if report is None:  # an app without the report (a test's): Textual's own handling
                raise
            report(self, error)


class ReportsWorkerErrors(SurvivesErrors):
    def post_unless_cancelled(self, message: Message) -> None:
        """From an exclusive worker: post its answer unless a newer worker of its group cancelled
        it. A thread worker runs on after cancel(); its answer, older than the newer one's, could
        arrive last and put the old state back (a resume's reload finishing after a save's)."""
        if not get_current_worker().is_cancelled:
            self.post_message(message)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state is WorkerState.ERROR:
            self.app.notify(error_text(event.worker.error), title="error", severity="error", timeout=8)


def traceback_text(error: BaseException) -> str:
    return "".join(traceback.format_exception(type(error), error, error.__traceback__))
