"""The nightly consolidation of knowledge items (the `consolidate` step).

In order, in one transaction:
1. exact duplicates (current items with the same statement hash) are superseded into one: the
   confirmed one, else a shared one, else the oldest; their sources count for it;
2. a draft that two independent sources state becomes confirmed (independent: different notes,
   agents, the owner, job runs; two callouts in one note are one source);
   in both, an item agents may see counts only what agents may see: it is never merged with an
   item hidden from them, nor confirmed by a hidden note (else an agent would find a visible item
   ended, or confirmed, because a private note states the same);
3. an item whose source is a note's text is flagged stale when that note is gone or the chunk it
   stood in changed (and unflagged when the text is back); callout items are kept by the import's
   callout sync, which compares each callout. Notes with `ai_processing: none` are not read;
4. importance decays by halves every knowledge.importance_half_life_days, counted in whole days
   (a second run the same day changes nothing); confirmation and each owner search that showed an
   item (search_log, read once: a watermark in meta) add knowledge.importance_boost.
Every change is logged in knowledge_decisions with its reason (source `job:consolidate`).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import re
from dataclasses import dataclass

import apsw

from mindtui.config import Settings
from mindtui.curation.kinds import now_iso
from mindtui.store import knowledge_lifecycle_store as life
from mindtui.store.batch import immediate
from mindtui.store.meta import SEARCH_WATERMARK_KEY, get_meta, set_meta

JOB_SOURCE = ("job", "job:consolidate")
_ITEM_RESULT = re.compile(r"^(?:k|knowledge):(\d+)$")


@dataclass
class ConsolidateReport:
    duplicates_superseded: int = 0
    confirmed: int = 0
    stale_flagged: int = 0
    stale_cleared: int = 0
    decayed: int = 0
    refreshed_by_search: int = 0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def independent_key(source_type: str, source_id: str) -> str:
    """Sources that count as one: a note (whichever of its callouts or chunks), an agent, the owner, a job run."""
    if source_type == "note":
        return "note:" + source_id.partition("#")[0]
    return f"{source_type}:{source_id}"


def _parse_time(text: str) -> datetime.datetime:
    value = datetime.datetime.fromisoformat(text)
    return value if value.tzinfo else value.replace(tzinfo=datetime.timezone.utc)


def _iso(value: datetime.datetime) -> str:
    return value.isoformat(timespec="seconds")


def _log(conn: apsw.Connection, now: str, decision: str, reason: str, item_id: int, **detail) -> None:
    life.log_decision(conn, now, *JOB_SOURCE, json.dumps({"item_id": item_id, **detail}, sort_keys=True),
                      decision, reason, item_id)


def boosted(importance: float, settings: Settings) -> float:
    return round(min(1.0, importance + settings.knowledge.importance_boost), 6)


def _rank(item: life.LifeItem, shared: set[int]) -> tuple:
    return (item.status != "confirmed", item.item_id not in shared, item.item_id)


def supersede_duplicates(conn: apsw.Connection, now: str) -> int:
    seen_by_agents = life.items_open_to_agents(conn)
    groups: dict[tuple[str, bool], list[life.LifeItem]] = {}
    for item in life.current_items(conn):
        groups.setdefault((item.statement_hash, item.item_id in seen_by_agents), []).append(item)
    done = 0
    for group in groups.values():
        if len(group) < 2:
            continue
        shared = {row[0] for row in conn.execute(
            "SELECT item_id FROM main.knowledge_items WHERE statement_hash = ? AND visibility = 'shared'",
            (group[0].statement_hash,))}
        keep, *others = sorted(group, key=lambda item: _rank(item, shared))
        for other in others:
            life.supersede_into(conn, other.item_id, keep.item_id, now)
            _log(conn, now, "supersede", f"consolidate: exact duplicate of item {keep.item_id}", other.item_id,
                 superseded_by=keep.item_id)
            done += 1
    return done


def confirm_corroborated(conn: apsw.Connection, settings: Settings, now: str) -> int:
    done = 0
    seen_by_agents, hidden_notes = life.items_open_to_agents(conn), life.notes_hidden_from_agents(conn)
    for item in life.current_items(conn):
        if item.status != "draft":
            continue
        keys = {independent_key(item.source_type, item.source_id)}
        keys.update(independent_key(t, i) for t, i in life.sources_of(conn, item.item_id)
                    if item.item_id not in seen_by_agents or t != "note" or i.partition("#")[0] not in hidden_notes)
        if len(keys) < 2:
            continue
        life.confirm(conn, item.item_id, boosted(item.importance, settings), now)
        _log(conn, now, "update", f"consolidate: confirmed, {len(keys)} independent sources agree", item.item_id,
             sources=sorted(keys))
        done += 1
    return done


def _chunk_matches(source_hash: str, chunk: tuple[str, str] | None) -> bool:
    if chunk is None:
        return False
    text, content_hash = chunk
    return source_hash in (content_hash, hashlib.sha256(text.encode("utf-8")).hexdigest())


def flag_stale(conn: apsw.Connection, now: str) -> tuple[int, int]:
    """(flagged, cleared) for note-sourced items that are not callout items (see callout_sync)."""
    consent = life.note_consent(conn)
    flagged = cleared = 0
    chunks: dict[str, dict] = {}
    for item in life.note_sourced_items(conn):
        note_id = item.source_note_id
        if note_id in consent and not consent[note_id][0]:
            continue  # ai_processing: none: never read by an automatic step
        if life.CALLOUT_MARK in item.source_id:
            if note_id in consent:
                continue  # the callout sync compares the callouts themselves
            gone = True
        else:
            if note_id in consent and note_id not in chunks:
                chunks[note_id] = life.chunk_texts(conn, note_id)
            gone = note_id not in consent or not _chunk_matches(
                item.source_hash, chunks[note_id].get(item.source_chunk_seq))
        if gone and item.stale_since is None:
            life.set_stale(conn, item.item_id, now, now)
            why = "its source note is gone" if note_id not in consent else "its source chunk changed or vanished"
            _log(conn, now, "stale", f"consolidate: {why}", item.item_id, note_id=note_id)
            flagged += 1
        elif not gone and item.stale_since is not None:
            life.set_stale(conn, item.item_id, None, now)
            _log(conn, now, "update", "consolidate: its source text is back as it was", item.item_id)
            cleared += 1
    return flagged, cleared


def decay(conn: apsw.Connection, settings: Settings, now: str) -> int:
    """Halve importance every half-life, in whole days since it was last set."""
    half_life = settings.knowledge.importance_half_life_days
    moment = _parse_time(now)
    done = 0
    for item in life.current_items(conn):
        days = (moment - _parse_time(item.importance_at)).days
        if days < 1:
            continue
        value = round(item.importance * 0.5 ** (days / half_life), 6)
        life.set_importance(conn, item.item_id, value, _iso(_parse_time(item.importance_at)
                                                            + datetime.timedelta(days=days)))
        done += 1
    return done


def _item_ids(results: list) -> set[int]:
    out = set()
    for entry in results:
        if isinstance(entry, dict) and isinstance(entry.get("item_id"), int):
            out.add(entry["item_id"])
        elif isinstance(entry, str):
            found = _ITEM_RESULT.match(entry)
            if found:
                out.add(int(found.group(1)))
    return out


def refresh_by_searches(conn: apsw.Connection, settings: Settings, now: str) -> int:
    seen = int(get_meta(conn, SEARCH_WATERMARK_KEY) or 0)
    searches = life.owner_searches_since(conn, seen)
    if not searches:
        return 0
    shown: dict[int, int] = {}
    for _, _, results in searches:
        for item_id in _item_ids(results[: settings.search.log_top]):
            shown[item_id] = shown.get(item_id, 0) + 1
    done = 0
    for item_id, times in sorted(shown.items()):
        item = life.get_item(conn, item_id)
        if item is None:
            continue
        value = item.importance
        for _ in range(times):
            value = boosted(value, settings)
        if value != item.importance:
            life.set_importance(conn, item_id, value, now)
            done += 1
    set_meta(conn, SEARCH_WATERMARK_KEY, str(searches[-1][0]))
    return done


def consolidate(conn: apsw.Connection, settings: Settings, now: str | None = None) -> ConsolidateReport:
    now = now or now_iso()
    report = ConsolidateReport()
    with immediate(conn):
        report.duplicates_superseded = supersede_duplicates(conn, now)
        report.confirmed = confirm_corroborated(conn, settings, now)
        report.stale_flagged, report.stale_cleared = flag_stale(conn, now)
        report.decayed = decay(conn, settings, now)
        report.refreshed_by_search = refresh_by_searches(conn, settings, now)
    return report
