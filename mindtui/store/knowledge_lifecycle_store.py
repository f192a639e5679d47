"""Query functions for the knowledge lifecycle: callout sync, nightly consolidation, gaps, stale items.

The writer (mindtui.knowledge.writer) adds and supersedes items; what is here changes an item's
bookkeeping (its source's position, stale flag, importance, draft -> confirmed, an exact duplicate
superseded into its twin, an item retracted or kept by the owner) and logs each decision.
Callers hold the transaction.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import apsw

from mindtui.store import knowledge_store
from mindtui.store.visibility import hidden_by_flags, item_open_to_agents, model_readable

CALLOUT_MARK = "#callout:"  # a callout item's source_id: '<note_id>#callout:<type>:<ordinal>'
WRITER_KINDS = ("unresolved_entity", "duplicate", "contradiction", "missing_quote")


@dataclass(frozen=True)
class LifeItem:
    item_id: int
    type: str
    title: str
    body: str
    about_note_id: str | None
    about_topic: str | None
    status: str
    source_type: str
    source_id: str
    source_note_id: str | None
    source_chunk_seq: int | None
    source_hash: str | None
    stale_since: str | None
    importance: float
    importance_at: str
    statement_hash: str
    created_at: str


_COLUMNS = ("item_id, type, title, body, about_note_id, about_topic, status, source_type, source_id, source_note_id,"
            " source_chunk_seq, source_hash, stale_since, importance, importance_at, statement_hash, created_at")


def _items(conn: apsw.Connection, where: str, args: tuple = ()) -> list[LifeItem]:
    return [LifeItem(*row) for row in conn.execute(
        f"SELECT {_COLUMNS} FROM main.knowledge_items WHERE {where} ORDER BY item_id", args)]


def items_open_to_agents(conn: apsw.Connection) -> set[int]:
    """The current items an agent may see, by the flags stored at import."""
    return {row[0] for row in conn.execute(
        f"SELECT k.item_id FROM main.knowledge_items k WHERE k.is_current = 1 AND {item_open_to_agents('k')}")}


def notes_hidden_from_agents(conn: apsw.Connection) -> set[str]:
    """The notes an agent may not see, by the flags stored at import (few: read by their index)."""
    return {row[0] for row in conn.execute(f"SELECT n.note_id FROM main.notes n WHERE {hidden_by_flags('n')}")}


def get_item(conn: apsw.Connection, item_id: int) -> LifeItem | None:
    found = _items(conn, "item_id = ?", (item_id,))
    return found[0] if found else None


def current_items(conn: apsw.Connection) -> list[LifeItem]:
    return _items(conn, "is_current = 1")


def callout_items(conn: apsw.Connection) -> list[LifeItem]:
    """Current items a knowledge callout stated (the owner's kept ones, source_hash NULL, excluded)."""
    return _items(conn, "is_current = 1 AND source_type = 'note' AND instr(source_id, ?) > 0"
                        " AND source_hash IS NOT NULL", (CALLOUT_MARK,))


def note_sourced_items(conn: apsw.Connection) -> list[LifeItem]:
    """Current items whose source is a note's text and that still point at it (source_hash set)."""
    return _items(conn, "is_current = 1 AND source_type = 'note' AND source_hash IS NOT NULL")


@dataclass(frozen=True)
class CalloutChunk:
    note_id: str
    seq: int
    text: str


def callout_chunks(conn: apsw.Connection) -> list[CalloutChunk]:
    """Chunks that may hold a callout, of notes a model may read (ai_processing on), in note order."""
    return [CalloutChunk(*row) for row in conn.execute(
        "SELECT c.note_id, c.seq, c.text FROM main.chunks c JOIN main.notes n ON n.note_id = c.note_id"
        f" WHERE {model_readable('n')} AND instr(c.text, '[!') > 0 ORDER BY c.note_id, c.seq")]


def note_consent(conn: apsw.Connection) -> dict[str, tuple[bool, str]]:
    """note_id -> (ai_processing, type) of every indexed note."""
    return {row[0]: (bool(row[1]), row[2]) for row in conn.execute(
        "SELECT note_id, ai_processing, type FROM main.notes")}


def chunk_texts(conn: apsw.Connection, note_id: str) -> dict[int, tuple[str, str]]:
    """seq -> (text, content_hash) of a note's chunks."""
    return {row[0]: (row[1], row[2]) for row in conn.execute(
        "SELECT seq, text, content_hash FROM main.chunks WHERE note_id = ?", (note_id,))}


def held_proposals(conn: apsw.Connection, source_ids: list[str]) -> dict[str, list[dict]]:
    """source id -> the proposals (as filed) of writer cards held for it, any status: a proposal the
    owner is asked about (or answered) is not submitted again."""
    out: dict[str, list[dict]] = {}
    if not source_ids:
        return out
    wanted = set(source_ids)
    marks = ", ".join("?" for _ in WRITER_KINDS)
    for kind_payload in conn.execute(
            f"SELECT payload FROM main.curation_items WHERE kind IN ({marks})", WRITER_KINDS):
        payload = json.loads(kind_payload[0])
        source = payload.get("source") if isinstance(payload, dict) else None
        source_id = source.get("id") if isinstance(source, dict) else None
        if source_id in wanted and isinstance(payload.get("proposal"), dict):
            out.setdefault(source_id, []).append(payload["proposal"])
    return out


def sources_of(conn: apsw.Connection, item_id: int) -> list[tuple[str, str]]:
    return [tuple(row) for row in conn.execute(
        "SELECT source_type, source_id FROM main.knowledge_sources WHERE item_id = ? ORDER BY seen_at, source_id",
        (item_id,))]


def items_with_source(conn: apsw.Connection, source_type: str, source_id: str) -> list[int]:
    """Items one source stated (as first source or as a corroboration), history included."""
    return [row[0] for row in conn.execute(
        "SELECT k.item_id FROM main.knowledge_items k WHERE ((k.source_type = ?1 AND"
        " k.source_id = ?2) OR EXISTS (SELECT 1 FROM main.knowledge_sources s WHERE s.item_id = k.item_id"
        " AND s.source_type = ?1 AND s.source_id = ?2)) ORDER BY k.item_id", (source_type, source_id))]


def add_source(conn: apsw.Connection, item_id: int, source_type: str, source_id: str, now: str) -> None:
    conn.execute("INSERT OR IGNORE INTO main.knowledge_sources (item_id, source_type, source_id, seen_at)"
                 " VALUES (?, ?, ?, ?)", (item_id, source_type, source_id, now))


# -- changes -------------------------------------------------------------------------------

def set_source_position(conn: apsw.Connection, item_id: int, chunk_seq: int, now: str) -> None:
    conn.execute("UPDATE main.knowledge_items SET source_chunk_seq = ?, updated_at = ? WHERE item_id = ?",
                 (chunk_seq, now, item_id))


def set_stale(conn: apsw.Connection, item_id: int, since: str | None, now: str) -> None:
    """Flag an item stale (its source text changed or vanished), or clear the flag (since None)."""
    conn.execute("UPDATE main.knowledge_items SET stale_since = ?, updated_at = ? WHERE item_id = ?",
                 (since, now, item_id))


def confirm(conn: apsw.Connection, item_id: int, importance: float, now: str) -> None:
    conn.execute("UPDATE main.knowledge_items SET status = 'confirmed', importance = ?, importance_at = ?,"
                 " updated_at = ? WHERE item_id = ?", (importance, now, now, item_id))


def keep_as_owner(conn: apsw.Connection, item_id: int, importance: float, now: str) -> None:
    """The owner vouches for an item whose source went away: confirmed, no longer tied to that text."""
    conn.execute("UPDATE main.knowledge_items SET status = 'confirmed', stale_since = NULL, source_hash = NULL,"
                 " importance = ?, importance_at = ?, updated_at = ? WHERE item_id = ?",
                 (importance, now, now, item_id))
    add_source(conn, item_id, "owner", "owner", now)


def supersede_into(conn: apsw.Connection, old: int, new: int, now: str) -> None:
    """`old` ends and points at `new` (kept as history, out of the full text); its sources count for `new`."""
    knowledge_store.end_item(conn, old, new, now)
    conn.execute("INSERT OR IGNORE INTO main.knowledge_sources (item_id, source_type, source_id, seen_at)"
                 " SELECT ?1, source_type, source_id, seen_at FROM main.knowledge_sources WHERE item_id = ?2"
                 " UNION ALL SELECT ?1, source_type, source_id, ?3 FROM main.knowledge_items WHERE item_id = ?2",
                 (new, old, now))


def retract(conn: apsw.Connection, item_id: int, now: str) -> None:
    """No longer current (the owner said it does not hold): kept as history, nothing deleted."""
    knowledge_store.end_item(conn, item_id, None, now)


def set_importance(conn: apsw.Connection, item_id: int, importance: float, at: str) -> None:
    conn.execute("UPDATE main.knowledge_items SET importance = ?, importance_at = ? WHERE item_id = ?",
                 (importance, at, item_id))


def log_decision(conn: apsw.Connection, now: str, source_type: str, source_id: str, proposal: str,
                 decision: str, reason: str, item_id: int | None = None, card_id: int | None = None) -> None:
    knowledge_store.record_decision(conn, now, source_type, source_id, proposal, decision, reason, item_id, card_id)


# -- what the nightly steps read -------------------------------------------------------------

def owner_searches_since(conn: apsw.Connection, after_id: int) -> list[tuple[int, str, list]]:
    """(search_id, searched_at, results) of the owner's searches logged after `after_id`."""
    out = []
    for search_id, at, results in conn.execute(
            "SELECT search_id, searched_at, results FROM main.search_log WHERE search_id > ? AND audience = 'owner'"
            " ORDER BY search_id", (after_id,)):
        try:
            parsed = json.loads(results)
        except ValueError:
            parsed = []
        out.append((search_id, at, parsed if isinstance(parsed, list) else []))
    return out


@dataclass(frozen=True)
class EntityNote:
    note_id: str
    path: str
    title: str
    type: str
    backlinks: int  # notes linking to it (explicit and rule edges, either way counted once per note)


def entity_notes_without_knowledge(conn: apsw.Connection, types: tuple[str, ...]) -> list[EntityNote]:
    """Notes of the entity types that a model may read (ai_processing on) and that no current
    confirmed item is about, with their number of linking notes."""
    if not types:
        return []
    marks = ", ".join("?" for _ in types)
    return [EntityNote(*row) for row in conn.execute(
        f"SELECT n.note_id, n.path, n.title, n.type, (SELECT count(DISTINCT e.source_id) FROM main.edges e"
        f" WHERE e.scope = 'note' AND e.target_id = n.note_id AND e.source_id != n.note_id"
        f" AND e.provenance IN ('explicit', 'rule')) FROM main.notes n WHERE n.type IN ({marks})"
        f" AND {model_readable('n')} AND NOT EXISTS (SELECT 1 FROM main.knowledge_items k"
        f" WHERE k.about_note_id = n.note_id AND k.is_current = 1 AND k.status = 'confirmed') ORDER BY n.path",
        tuple(types))]


def stale_items(conn: apsw.Connection) -> list[LifeItem]:
    return _items(conn, "is_current = 1 AND stale_since IS NOT NULL")


def note_titles(conn: apsw.Connection, note_ids: list[str]) -> dict[str, tuple[str, str]]:
    """note_id -> (path, title) for the notes that exist."""
    out = {}
    for note_id in set(note_ids):
        row = conn.execute("SELECT path, title FROM main.notes WHERE note_id = ?", (note_id,)).fetchone()
        if row:
            out[note_id] = (row[0], row[1])
    return out


def decision_exists(conn: apsw.Connection, source_type: str, source_id: str, proposal: str, decision: str) -> bool:
    return conn.execute("SELECT 1 FROM main.knowledge_decisions WHERE source_type = ? AND source_id = ?"
                        " AND proposal = ? AND decision = ? LIMIT 1",
                        (source_type, source_id, proposal, decision)).fetchone() is not None
