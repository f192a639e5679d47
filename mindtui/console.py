"""Progress lines on stderr for the headless CLI (stdout carries results only)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


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
        self.stream.write(text + "\n")
        self.stream.flush()
