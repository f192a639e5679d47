"""Fill the queue from what the kinds find now, and close what they no longer find.

For each kind, in one transaction: a cause without a card gets one (never a second one for the
same subject: UNIQUE(kind, subject_key)); an open or snoozed card gets the cause's current
payload and importance; a card that closed by itself reopens when its cause comes back; a card
the owner answered (resolved, dismissed, rejected) stays as it is; an open or snoozed card whose
cause is gone is resolved with {"by": "auto", "reason": ...}; a snoozed card whose time has come
opens again. Nothing changes when nothing changed: a second refresh writes no row.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import apsw

from mindtui.config import Settings
from mindtui.curation.kinds import Candidate, Kind, now_iso
from mindtui.curation.registry import KINDS, kinds_named
from mindtui.store import curation_store as store
from mindtui.store.batch import immediate


@dataclass
class KindReport:
    new: int = 0
    updated: int = 0
    reopened: int = 0  # closed by itself earlier, or a snooze that ran out
    closed: int = 0  # the cause is gone
    open: int = 0  # open cards of the kind after the refresh
    skipped: str = ""  # why the kind was not refreshed (its causes cannot be known now)


@dataclass
class RefreshReport:
    kinds: dict[str, KindReport] = field(default_factory=dict)

    def as_dict(self) -> dict:
        out = {name: dict(report.__dict__) for name, report in self.kinds.items()}
        for item in out.values():
            if not item["skipped"]:
                del item["skipped"]
        totals = {key: sum(r.__dict__[key] for r in self.kinds.values())
                  for key in ("new", "updated", "reopened", "closed", "open")}
        return {**{f"{key}_total": value for key, value in totals.items()}, "kinds": out}


def _same(item: store.CurationItem, candidate: Candidate) -> bool:
    return (item.note_id == candidate.note_id and item.importance == candidate.importance
            and json.dumps(item.payload, sort_keys=True) == json.dumps(candidate.payload, sort_keys=True))


def refresh(conn: apsw.Connection, settings: Settings, kinds: tuple[str, ...] | list[str] | None = None,
            sources: dict | None = None, now: str | None = None) -> RefreshReport:
    """Refresh the named kinds (all by default). `sources`: what some kinds are given by their
    caller (the change graph's mass edits); a kind whose source is missing is skipped."""
    sources = sources or {}
    report = RefreshReport()
    for kind in (KINDS.values() if kinds is None else kinds_named(kinds)):
        missing = [name for name in kind.needs if name not in sources]
        if missing:
            report.kinds[kind.name] = KindReport(skipped=f"needs {', '.join(missing)}")
            continue
        report.kinds[kind.name] = _refresh_kind(conn, settings, kind, sources, now or now_iso())
    return report


def _refresh_kind(conn: apsw.Connection, settings: Settings, kind: Kind, sources: dict, now: str) -> KindReport:
    result = KindReport()
    found = kind.detect(conn, settings, sources)
    if found is None:
        result.skipped = "its causes cannot be known now"
        return result
    candidates = {c.subject_key: c for c in found}
    with immediate(conn):
        existing = store.items_of_kind(conn, kind.name)
        waiting = sum(1 for item in existing.values() if item.status in (store.OPEN, store.SNOOZED))
        limit = kind.new_card_limit(conn, settings, waiting)
        fresh = sorted((c for key, c in candidates.items() if key not in existing),
                       key=lambda c: (-c.importance, c.subject_key))
        for candidate in fresh[:limit] if limit is not None else fresh:
            result.new += store.insert_item(conn, kind.name, candidate.subject_key, candidate.note_id,
                                            candidate.payload, candidate.importance, now)
        for key, item in existing.items():
            candidate = candidates.get(key)
            if candidate is None:
                if item.status in (store.OPEN, store.SNOOZED):
                    store.set_item_state(conn, item.item_id, store.RESOLVED, {"by": "auto", "reason": kind.gone_reason},
                                         None, now)
                    result.closed += 1
                continue
            reopen = (item.status == store.RESOLVED and (item.answer or {}).get("by") == "auto") or (
                item.status == store.SNOOZED and (item.snoozed_until or "") <= now)
            if item.status not in (store.OPEN, store.SNOOZED) and not reopen:
                continue  # answered by the owner: never asked again
            if not _same(item, candidate):
                store.update_item_content(conn, item.item_id, candidate.note_id, candidate.payload,
                                          candidate.importance, now)
                result.updated += 1
            if reopen:
                store.set_item_state(conn, item.item_id, store.OPEN, None, None, now)
                result.reopened += 1
        result.open = store.status_counts(conn).get(kind.name, 0)
    return result
