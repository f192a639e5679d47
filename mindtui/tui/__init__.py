"""The Textual front end. Only `mindtui.cli` imports this package (lazily, for `mindtui tui`):
nothing below it imports Textual."""

from __future__ import annotations

from mindtui.config import Settings


def run_tui(settings: Settings) -> int:
    """Run the app on the configured database; the exit code it quits with (0 for q)."""
    from mindtui.tui.app import make_app

    app = make_app(settings)
    code = app.run()
    return code if isinstance(code, int) else 0
