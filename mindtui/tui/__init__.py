"""The Textual front end. Only `mindtui.cli` imports this package (lazily, for `mindtui tui`):
nothing below it imports Textual."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Iterator

from mindtui.config import Settings


def run_tui(settings: Settings) -> int:
    """Run the app on the configured database; the exit code it quits with (0 for q)."""
    from mindtui.tui.app import make_app

    app = make_app(settings)
    with drawn_on_the_terminal():
        app.run()
    return finished(app)


@contextmanager
def drawn_on_the_terminal() -> Iterator[None]:
    """Textual draws on fd 2 (sys.__stderr__). With stderr sent elsewhere (`2>log`, `2>/dev/null`,
    or closed: `2>&-`, which the launcher made /dev/null) the screen went into that file and the
    terminal stayed blank, or the app failed on a None sys.__stderr__. For the app's run, fd 2 is
    the controlling terminal; afterwards it is the redirect again, which gets what is written
    after the app (the tracebacks of errors it survived). Without a terminal nothing changes."""
    if sys.__stderr__ is None:
        sys.__stderr__ = sys.stderr
    if os.isatty(2):
        yield
        return
    try:
        terminal = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:  # no controlling terminal (a service, a pipe): Textual's own behaviour
        yield
        return
    redirect = os.dup(2)
    sys.__stderr__.flush()
    os.dup2(terminal, 2)
    os.close(terminal)
    try:
        yield
    finally:
        sys.__stderr__.flush()
        os.dup2(redirect, 2)
        os.close(redirect)


def run_app(app, **run_options) -> int:
    """Run the app; its exit code: 0 for q, 1 (EXIT_FAILED, set by Textual) when an error ended it.
    The tracebacks of errors it survived go to stderr (the screen showed a notification)."""
    app.run(**run_options)
    return finished(app)


def finished(app) -> int:
    """After the app's run: the tracebacks to stderr, and the exit code."""
    from mindtui.errors import EXIT_OK

    for text in app.errors:
        print(text, file=sys.stderr, end="")
    return EXIT_OK if app.return_code is None else app.return_code  # Textual sets 1 when an error ends it
