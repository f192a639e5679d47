"""Progress on stderr for the headless CLI (stdout carries results only): a human progress line,
or JSON lines (`--progress json`) for a parent process that runs the job (the TUI)."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Callable, TextIO

from mindtui.service.printable import printable


class StderrProgress:
    """`step  done/total  rate/s  ETA`: redrawn in place on a terminal, a line every few seconds otherwise."""

    def __init__(self, stream: TextIO | None = None, quiet: bool = False, interval: float = 2.0) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval = 0.1 if self.tty else interval
        self._step = ""
        self._started = 0.0
        self._last = 0.0
        self._open_line = False

    def __call__(self, step: str, done: int, total: int, detail: str = "") -> None:
        if self.quiet:
            return
        now = time.monotonic()
        if step != self._step:
            self.finish()
            self._step, self._started, self._last = step, now, 0.0
        if now - self._last < self.interval and done < total:
            return
        self._last = now
        elapsed = now - self._started
        if elapsed < 0.5:  # too early for a meaningful rate
            line = f"{step}: {done}/{total}"
        else:
            rate = done / elapsed
            eta = (total - done) / rate if rate > 0 else 0.0
            line = f"{step}: {done}/{total}  {rate:,.1f}/s  ETA {eta:,.0f}s"
        if self.tty:
            self.stream.write("\r\x1b[2K" + line[:120])
            self._open_line = True
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def finish(self) -> None:
        if self._open_line:
            self.stream.write("\n")
            self.stream.flush()
            self._open_line = False

    def message(self, text: str) -> None:
        self.finish()
        self.stream.write(printable(text) + "\n")
        self.stream.flush()


# -- `--progress json`: the protocol a parent process reads (mindtui.service.job_process) --------------

LIST_ITEMS_SHOWN = 10  # a report's list longer than this is cut, with `<key>_total` saying how long it was
TEXT_CHARS_SHOWN = 2000


def json_line(event: str, **fields) -> str:
    """One event as one line of JSON (no newline inside: strings are escaped)."""
    return json.dumps({"event": event, **fields}, ensure_ascii=False, default=str)


def summary_report(report: dict) -> dict:
    """A step report for an event: counts and short values as they are, long lists cut to their
    first items plus `<key>_total`, long texts (a traceback) cut."""
    out: dict = {}
    for key, value in report.items():
        if isinstance(value, dict):
            out[key] = summary_report(value)
        elif isinstance(value, (list, tuple)):
            out[key] = list(value[:LIST_ITEMS_SHOWN])
            if len(value) > LIST_ITEMS_SHOWN:
                out.setdefault(f"{key}_total", len(value))
        elif isinstance(value, str) and len(value) > TEXT_CHARS_SHOWN:
            out[key] = value[:TEXT_CHARS_SHOWN] + "…"
        else:
            out[key] = value
    return out


class JsonProgress:
    """`--progress json`: job events as JSON lines on stderr (stdout still carries the result).

    Events: start, step, progress (at most one per `interval` per step, plus the step's last
    one), message, step_done, result; `error` comes from the CLI when the job cannot run.
    It is the runner's progress callback and its hooks (`mindtui.service.JobHooks`) at once.
    A reader that went away does not fail the job: output stops, the job goes on.
    """

    def __init__(self, stream: TextIO | None = None, quiet: bool = False, interval: float = 0.1,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet  # no progress events (the others still come)
        self.interval = interval
        self.clock = clock
        self._step = ""
        self._first: tuple[float, int] | None = None  # (time, done) of the step's first progress report
        self._last = float("-inf")
        self._pending: dict | None = None  # the latest progress event held back by the throttle
        self._broken = False

    # -- output ----------------------------------------------------------------------------
    def emit(self, event: str, **fields) -> None:
        if self._broken:
            return
        try:
            self.stream.write(json_line(event, **fields) + "\n")
            self.stream.flush()
        except OSError:  # the reading process is gone: keep working, stop talking
            self._broken = True

    def emit_from_signal(self, event: str, **fields) -> None:
        """For a signal handler: one write(2) straight to the file descriptor, so it cannot
        re-enter the stream's buffer while the main thread is inside it."""
        try:
            fd = self.stream.fileno()
        except (OSError, ValueError):  # no descriptor (a StringIO in a test)
            self.emit(event, **fields)
            return
        if self._broken:
            return
        try:
            os.write(fd, (json_line(event, **fields) + "\n").encode("utf-8"))
        except OSError:
            self._broken = True

    # -- job hooks -------------------------------------------------------------------------
    def job_started(self, job: str, batch_id: str, steps: list[str]) -> None:
        self.emit("start", job=job, batch_id=batch_id, steps=list(steps), pid=os.getpid())

    def step_started(self, step: str) -> None:
        self._begin(step)
        self.emit("step", step=step)

    def step_finished(self, result) -> None:
        self.finish()
        self.emit("step_done", step=result.step, status=result.status, error=result.error,
                  report=summary_report(result.report), run_id=result.run_id)

    # -- progress and messages -------------------------------------------------------------
    def __call__(self, step: str, done: int, total: int, detail: str = "") -> None:
        if self.quiet:
            return
        if step != self._step:
            self._begin(step)
        now = self.clock()
        if self._first is None:
            self._first = (now, done)
        rate = eta = None
        elapsed = now - self._first[0]
        if elapsed >= 0.5 and done > self._first[1]:
            rate = (done - self._first[1]) / elapsed
            eta = round(max(total - done, 0) / rate, 1)
            rate = round(rate, 2)
        event = {"step": step, "done": done, "total": total, "detail": detail, "rate": rate, "eta_s": eta}
        if now - self._last >= self.interval or done >= total:
            self._last, self._pending = now, None
            self.emit("progress", **event)
        else:
            self._pending = event

    def message(self, text: str) -> None:
        self.emit("message", text=text)

    def result(self, result) -> None:
        """The job's outcome (a JobResult), reports summarised as in step_done."""
        data = result.as_dict()
        for step in data["steps"]:
            step["report"] = summary_report(step["report"])
        self.emit("result", **data)  # as_dict says cancelled (and which steps a cancel left out)

    def finish(self) -> None:
        """Send the progress event the throttle held back (a step's last one)."""
        if self._pending is not None:
            pending, self._pending = self._pending, None
            self._last = self.clock()
            self.emit("progress", **pending)

    def _begin(self, step: str) -> None:
        self.finish()
        self._step, self._first, self._last = step, None, float("-inf")
