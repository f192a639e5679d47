"""`mindtui knowledge ingest`: proposals as JSON lines, each decided on its own.

A line that is not JSON, or not a v1 proposal, is an 'invalid' decision with the validator's
message (logged like any other); the other lines still go in. Blank lines are skipped.
"""

from __future__ import annotations

from typing import Callable, Iterable

import apsw

from mindtui.config import Settings
from mindtui.knowledge.proposal import Source
from mindtui.knowledge.writer import Decision, submit


def ingest_lines(conn: apsw.Connection, settings: Settings, lines: Iterable[str], source: Source, *,
                 embedder=None, about_conn: apsw.Connection | None = None,
                 item_row: Callable[[int], int] | None = None) -> list[tuple[int, Decision]]:
    """One (line number (1-based), decision) per non-blank line (item_row: as writer.submit's)."""
    results = []
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if not text:
            continue
        decision = submit(conn, settings, text, source, embedder=embedder, about_conn=about_conn, item_row=item_row)
        results.append((number, decision))
    return results
