"""The `mindtui` command's entry point: the full-screen app without the CLI's imports.

`mindtui` alone on a terminal, `mindtui tui` and `mindtui [tui] --db PATH` start the app straight
away: importing mindtui.cli would import the whole service stack before the first frame (the
app imports it in the background instead, see tui.lazy). Everything else, and anything this
does not recognise, goes to mindtui.cli, which parses, validates and reports as always.
"""

from __future__ import annotations

import os
import sys
from typing import Sequence


def open_closed_streams() -> None:
    """A closed stdin, stdout or stderr (`2>&-`, a careless unit file or cron line) becomes
    /dev/null. Python leaves sys.stderr None, and a progress line written to it failed the
    import; and the next file opened would take the free descriptor, so whatever wrote to fd 2
    would write into that file."""
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass  # closed: filled below
        opened = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
        if opened != fd:  # (a lower one was free too: it is filled first, so this is rare)
            os.dup2(opened, fd)
            os.close(opened)
        setattr(sys, name, open(fd, "r" if fd == 0 else "w", encoding="utf-8", closefd=False,
                                errors="strict" if fd == 0 else "backslashreplace"))  # as Python's own stderr


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
    open_closed_streams()
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
