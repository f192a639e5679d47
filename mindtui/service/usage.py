"""Usage memory behind the service: recording what the owner opened after a search, forgetting it.

Owner only: an agent's service refuses both (agents neither teach the memory nor see it).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from mindtui.errors import InputError
from mindtui.graph.neighbours import find_note
from mindtui.search.fit import forget_learnt
from mindtui.store import usage_store


@dataclass
class OpenRecorded:
    search_id: int | None  # the search log entry the open hangs on (None: the search could not be logged)
    open_id: int | None
    note_id: str
    rank: int | None  # its place among the search's results (1-based), None: not among them
    notices: list[str] = field(default_factory=list)


def record_open(engine, conn, query: str, mode: str, results: list[str], opened: str, how: str,
                search_id: int | None) -> OpenRecorded:
    """Log the search unless `search_id` names its entry already, then the open of `opened` (a note
    name or id). A failure to record is a notice: it never fails what the owner was doing."""
    if how not in usage_store.OPEN_WAYS:
        raise InputError(f"unknown way of opening {how!r}; use one of {', '.join(usage_store.OPEN_WAYS)}")
    note_id = find_note(conn, opened).note_id
    rank = results.index(note_id) + 1 if note_id in results else None
    notices: list[str] = []
    if search_id is not None:
        # A front end holds on to the search an open came from (the TUI: for `y` and links followed
        # later): forgotten since (`usage forget` in another terminal), its id may have been taken
        # by the next search logged, whose query the open would then teach.
        logged = usage_store.logged_results(conn, search_id)
        if logged is None or logged != results[:len(logged)]:
            return OpenRecorded(None, None, note_id, rank, ["open not recorded: the search it came from was forgotten"])
    if search_id is None:
        search_id, notices = engine.log_entry(query, mode, results)
    if search_id is None:
        return OpenRecorded(None, None, note_id, rank, notices + ["open not recorded: the search was not logged"])
    try:
        open_id = usage_store.record_open(conn, search_id, note_id, rank, how)
    except ValueError as exc:
        raise InputError(str(exc)) from exc
    return OpenRecorded(search_id, open_id, note_id, rank, notices)


def parse_before(text: str | None) -> str | None:
    """--before DATE (YYYY-MM-DD, or an ISO time) as the ISO time the log compares with."""
    if text is None:
        return None
    try:
        moment = datetime.datetime.fromisoformat(text.strip())
    except ValueError as exc:
        raise InputError(f"--before {text!r}: not a date (use YYYY-MM-DD)") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    try:
        return moment.astimezone(datetime.timezone.utc).isoformat(timespec="seconds")
    except OverflowError as exc:  # 0001-01-01T00:00+01:00 is a day before the first one datetime knows
        raise InputError(f"--before {text!r}: out of range (use a date from 0001-01-02 to 9999-12-30)") from exc


def forget(conn, *, query: str | None, note: str | None, before: str | None, everything: bool) -> dict:
    given = {"--query": query, "--note": note, "--before": before}
    # An empty value is a mistake (a script's unset variable), not a condition left out: with --all
    # beside it, or alone, it would otherwise forget more than was asked for.
    empty = [flag for flag, value in given.items() if value is not None and not value.strip()]
    if empty:
        raise InputError(f"{empty[0]} is empty: say what to forget")
    if not (any(value is not None for value in given.values()) or everything):
        raise InputError("say what to forget: --query TEXT, --note NOTE, --before DATE or --all")
    if everything and any(value is not None for value in given.values()):
        raise InputError("--all forgets everything: give it alone")
    note_id = find_note(conn, note).note_id if note is not None else None
    with usage_store.scrubbing(conn), conn:
        counts = usage_store.forget(conn, query=query, note_id=note_id, before=parse_before(before),
                                    everything=everything)
        # The nightly fit's values were fitted to the opens just forgotten: they go with them.
        counts["learnt_settings_forgotten"] = bool(counts["opens"] or everything) and forget_learnt(conn)
    return counts
