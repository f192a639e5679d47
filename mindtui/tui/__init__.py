"""The Textual front end. Only `mindtui.cli` imports this package (lazily, for `mindtui tui`):
nothing below it imports Textual."""

from __future__ import annotations

import sys

from mindtui.config import Settings


def run_tui(settings: Settings) -> int:
    """Run the app on the configured database; the exit code it quits with (0 for q)."""
    from mindtui.tui.app import make_app

    return run_app(make_app(settings))


def run_app(app, **run_options) -> int:
    """Run the app; its exit code: 0 for q, 1 (EXIT_FAILED, set by Textual) when an error ended it.
    The tracebacks of errors it survived go to stderr (the screen showed a notification)."""
    from mindtui.errors import EXIT_OK

    app.run(**run_options)
    for text in app.errors:
        print(text, file=sys.stderr, end="")
    return EXIT_OK if app.return_code is None else app.return_code  # Textual sets 1 when an error ends it
