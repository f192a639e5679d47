"""Read work sessions from a work-log note: markdown tables whose columns are found by header name.

A work log is a table like `| Datum | Sitzung | Notizen | Dauer |`. Which headers name the
session (or date) and the notes worked on is configuration; any other column may be added,
removed or moved without changing what is read. Pure functions: text in, sessions out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mindtui.vault.links import split_target, wikilinks_in
from mindtui.vault.markdown import parse_note

_SEPARATOR_CELL = re.compile(r"^:?-{1,}:?$")
_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


@dataclass(frozen=True)
class LogColumns:
    """Accepted header names (compared case- and markup-insensitively); from `graph.*_columns`."""

    session: tuple[str, ...]
    date: tuple[str, ...]
    notes: tuple[str, ...]


@dataclass
class Session:
    key: str  # "date session" (or whichever of the two the table has)
    date: str
    targets: list[str] = field(default_factory=list)  # link targets as written, in order, unique
    rows: list[str] = field(default_factory=list)  # the table rows it came from (evidence)
    lines: list[int] = field(default_factory=list)


@dataclass
class LogReading:
    sessions: list[Session] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    tables_used: int = 0


def header_key(cell: str) -> str:
    """How a header cell is compared: no markup, no case, single spaces."""
    return " ".join(re.sub(r"[*_`~]", "", cell).casefold().split())


def split_row(line: str) -> list[str]:
    """Cells of a table row; `\\|` (a pipe inside a cell, e.g. a wikilink label) does not split."""
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    return [cell.strip() for cell in _UNESCAPED_PIPE.split(body)]


def _is_separator(cells: list[str]) -> bool:
    return bool(cells) and all(_SEPARATOR_CELL.match(c.replace(" ", "")) for c in cells)


def _content_lines(text: str, source: str) -> tuple[list[str], int]:
    """The note's body lines as the importer's parser sees them, code blocks blanked (a table shown
    as an example in a fence is not a log), and the file line number of the first one."""
    parsed = parse_note(text, source)
    lines = list(parsed.lines)
    for start, end in parsed.fences:
        for index in range(start, min(end, len(lines))):
            lines[index] = ""
    return lines, parsed.body_start_line


def _tables(lines: list[str], first_line: int) -> list[tuple[int, list[str], list[tuple[int, list[str], str]]]]:
    """(header line number, header cells, [(line number, cells, raw row)]) for each table (1-based file lines)."""
    tables = []
    i = 0
    while i < len(lines) - 1:
        line, following = lines[i], lines[i + 1]
        if "|" in line and "|" in following and _is_separator(split_row(following)):
            header = split_row(line)
            rows = []
            j = i + 2
            while j < len(lines) and "|" in lines[j] and lines[j].strip():
                rows.append((first_line + j + 1, split_row(lines[j]), lines[j].strip()))
                j += 1
            tables.append((first_line + i + 1, header, rows))
            i = j
        else:
            i += 1
    return tables


def _find(header: list[str], names: tuple[str, ...]) -> int | None:
    wanted = {header_key(n) for n in names}
    for index, cell in enumerate(header):
        if header_key(cell) in wanted:
            return index
    return None


def read_work_log(text: str, columns: LogColumns, source: str) -> LogReading:
    """Sessions from every table that has a notes column and a session or date column.

    Rows of one session key (several rows, or several tables) merge into one session.
    Tables inside fenced code blocks are examples, not sessions.
    """
    reading = LogReading()
    by_key: dict[str, Session] = {}
    found_tables = _tables(*_content_lines(text, source))
    for header_line, header, rows in found_tables:
        notes_at = _find(header, columns.notes)
        session_at, date_at = _find(header, columns.session), _find(header, columns.date)
        if notes_at is None or (session_at is None and date_at is None):
            continue
        reading.tables_used += 1
        for line_no, cells, raw in rows:
            def cell(index: int | None) -> str:
                return cells[index] if index is not None and index < len(cells) else ""

            # Session numbers may restart per day or per table: with both columns the date is part of the key.
            key = " ".join(part for part in (cell(date_at), cell(session_at)) if part) if session_at is not None \
                else cell(date_at)
            if not cell(session_at) and not cell(date_at):
                reading.warnings.append(f"{source}:{line_no}: a row with no session or date is skipped")
                continue
            session = by_key.setdefault(key, Session(key, cell(date_at)))
            session.date = session.date or cell(date_at)
            for match in wikilinks_in(cell(notes_at)):
                _, target, _ = split_target(match.group(2))
                if target and target not in session.targets:
                    session.targets.append(target)
            session.rows.append(raw)
            session.lines.append(line_no)
    if not reading.tables_used:
        headers = "; ".join(" | ".join(h) for _, h, _ in found_tables[:3]) or "no tables at all"
        reading.warnings.append(
            f"{source}: no table with a notes column ({' / '.join(columns.notes)}) and a session or date column "
            f"({' / '.join(columns.session + columns.date)}); found: {headers}")
    reading.sessions = list(by_key.values())
    return reading
