"""The `mindtui` command's entry point: the full-screen app without the CLI's imports.

`mindtui` alone on a terminal, `mindtui tui` and `mindtui [tui] --db PATH` start the app straight
away: importing mindtui.cli would import the whole service stack before the first frame (the
app imports it in the background instead, see tui.lazy). Everything else, and anything this
does not recognise, goes to mindtui.cli, which parses, validates and reports as always.
"""

from __future__ import annotations

import sys
from typing import Sequence


def _tui_db(argv: list[str]) -> tuple[bool, str | None]:
    """(is this a plain TUI start, its --db). Only `tui` and `--db PATH` are understood here."""
    rest, db = [], None
    words = iter(argv)
    for word in words:
        if word == "--db":
            db = next(words, None)
            if db is None:
                return False, None
        elif word.startswith("--db="):
            db = word.removeprefix("--db=")
        else:
            rest.append(word)
    if rest == ["tui"]:
        return True, db
    return not rest and sys.stdin.isatty() and sys.stdout.isatty(), db


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    is_tui, db = _tui_db(args)
    if is_tui:
        from mindtui.config import load_settings
        from mindtui.errors import MindtuiError

        try:
            settings = load_settings().with_overrides(db=db)
        except MindtuiError:
            is_tui = False  # the CLI says what is wrong, with its exit code
        else:
            from mindtui.tui import run_tui

            return run_tui(settings)
    from mindtui.cli import main as cli_main

    return cli_main(args)
