"""Query functions for the curation queue (cards and their undo log) and the rows its kinds read."""

from __future__ import annotations

import json
from dataclasses import dataclass

import apsw


OPEN, RESOLVED, DISMISSED, SNOOZED = "open", "resolved", "dismissed", "snoozed"
STATUSES = (OPEN, RESOLVED, DISMISSED, SNOOZED)


def _json(value) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _load(text: str | None):
    return None if text is None else json.loads(text)


@dataclass(frozen=True)
class CurationItem:
    item_id: int
    kind: str
    subject_key: str
    note_id: str | None
    payload: dict
    importance: float
    status: str
    answer: dict | None
    snoozed_until: str | None
    created_at: str
    updated_at: str
    resolved_at: str | None


_ITEM_COLUMNS = ("item_id, kind, subject_key, note_id, payload, importance, status, answer, snoozed_until,"
                 " created_at, updated_at, resolved_at")


def _item(row) -> CurationItem:
    return CurationItem(row[0], row[1], row[2], row[3], json.loads(row[4]), row[5], row[6], _load(row[7]),
                        row[8], row[9], row[10], row[11])


def get_item(conn: apsw.Connection, item_id: int) -> CurationItem | None:
    row = conn.execute(f"SELECT {_ITEM_COLUMNS} FROM curation_items WHERE item_id = ?", (item_id,)).fetchone()
    return _item(row) if row else None


def items_of_kind(conn: apsw.Connection, kind: str) -> dict[str, CurationItem]:
    """subject_key -> card, every status."""
    return {item.subject_key: item for item in map(_item, conn.execute(
        f"SELECT {_ITEM_COLUMNS} FROM curation_items WHERE kind = ?", (kind,)))}


def list_items(conn: apsw.Connection, kind: str | None, status: str | None, limit: int | None) -> list[CurationItem]:
    """Cards by importance (highest first), then oldest first; kind/status None = any."""
    rows = conn.execute(
        f"SELECT {_ITEM_COLUMNS} FROM curation_items WHERE (?1 IS NULL OR kind = ?1) AND (?2 IS NULL OR status = ?2)"
        " ORDER BY importance DESC, item_id LIMIT ?3", (kind, status, -1 if limit is None else int(limit)))
    return [_item(row) for row in rows]


def status_counts(conn: apsw.Connection, status: str = OPEN) -> dict[str, int]:
    return dict(conn.execute("SELECT kind, count(*) FROM curation_items WHERE status = ? GROUP BY kind ORDER BY kind",
                             (status,)).fetchall())


def insert_item(conn: apsw.Connection, kind: str, subject_key: str, note_id: str | None, payload: dict,
                importance: float, now: str) -> bool:
    """A new open card; False (nothing written) when the kind already has one for this subject."""
    conn.execute(
        "INSERT INTO main.curation_items (kind, subject_key, note_id, payload, importance, status, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, 'open', ?, ?) ON CONFLICT (kind, subject_key) DO NOTHING",
        (kind, subject_key, note_id, _json(payload), importance, now, now))
    return conn.changes() > 0


def update_item_content(conn: apsw.Connection, item_id: int, note_id: str | None, payload: dict,
                        importance: float, now: str) -> None:
    conn.execute("UPDATE curation_items SET note_id = ?, payload = ?, importance = ?, updated_at = ? WHERE item_id = ?",
                 (note_id, _json(payload), importance, now, item_id))


def set_item_state(conn: apsw.Connection, item_id: int, status: str, answer: dict | None,
                   snoozed_until: str | None, now: str) -> None:
    """A card's status and answer; resolved_at is set for resolved/dismissed, cleared otherwise."""
    conn.execute(
        "UPDATE curation_items SET status = ?1, answer = ?2, snoozed_until = ?3, updated_at = ?4,"
        " resolved_at = CASE WHEN ?1 IN ('resolved', 'dismissed') THEN ?4 END WHERE item_id = ?5",
        (status, _json(answer), snoozed_until, now, item_id))


def items_answered_with(conn: apsw.Connection, kind: str, action: str) -> list[CurationItem]:
    """Resolved cards of a kind whose answer was `action` (e.g. the mass edits included)."""
    return [_item(row) for row in conn.execute(
        f"SELECT {_ITEM_COLUMNS} FROM curation_items WHERE kind = ? AND status = 'resolved'"
        " AND json_extract(answer, '$.action') = ? ORDER BY item_id", (kind, action))]


def subject_key(**parts) -> str:
    """A card's subject key: compact JSON, keys sorted. By convention the values under `note` and
    `log`, and the list under `pair` (sorted), are note ids: they move with the note's id."""
    return json.dumps(parts, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _rekey(key: str, old: str, new: str) -> str:
    parts = json.loads(key)
    for name in ("note", "log"):
        if parts.get(name) == old:
            parts[name] = new
    if isinstance(parts.get("pair"), list):
        parts["pair"] = sorted(new if n == old else n for n in parts["pair"])
    return subject_key(**parts)


def move_items(conn: apsw.Connection, old: str, new: str) -> None:
    """A note's id changed: its cards follow (note_id and subject keys). A card whose new key is
    taken already stays under the old one (it closes by itself)."""
    rows = conn.execute("SELECT item_id, subject_key FROM main.curation_items WHERE note_id = ?1"
                        " OR instr(subject_key, ?2) > 0", (old, json.dumps(old, ensure_ascii=False))).fetchall()
    for item_id, key in rows:
        conn.execute("UPDATE OR IGNORE main.curation_items SET subject_key = ?, note_id = CASE WHEN note_id = ?"
                     " THEN ? ELSE note_id END WHERE item_id = ?", (_rekey(key, old, new), old, new, item_id))


# -- the undo log -------------------------------------------------------------------------

@dataclass(frozen=True)
class CurationAction:
    action_id: int
    item_id: int
    action: str
    args: dict
    done_at: str
    files: list[dict]  # [{path, before (None: did not exist), after_sha256 (None: deleted)}], + after while pending
    prev_status: str
    prev_answer: dict | None
    prev_snoozed_until: str | None
    knowledge: dict | None = None  # what the answer changed in the knowledge tables (store.knowledge_journal)


def insert_action(conn: apsw.Connection, item_id: int, action: str, args: dict, files: list[dict],
                  previous: CurationItem, now: str, pending: bool = False, knowledge: dict | None = None) -> int:
    """An answer's undo record; pending: its files are written after this commits (finish_action then)."""
    conn.execute(
        "INSERT INTO curation_actions (item_id, action, args, done_at, files, prev_status, prev_answer,"
        " prev_snoozed_until, pending, knowledge) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (item_id, action, _json(args), now, json.dumps(files, ensure_ascii=False), previous.status,
         _json(previous.answer), previous.snoozed_until, int(pending), _json(knowledge or None)))
    return conn.last_insert_rowid()


_ACTION_COLUMNS = ("action_id, item_id, action, args, done_at, files, prev_status, prev_answer, prev_snoozed_until,"
                   " knowledge")


def _action(row: tuple) -> CurationAction:
    return CurationAction(row[0], row[1], row[2], json.loads(row[3]), row[4], json.loads(row[5]), row[6],
                          _load(row[7]), row[8], _load(row[9]))


def last_action(conn: apsw.Connection) -> CurationAction | None:
    """The latest action not undone yet (and not pending: its files are still being written)."""
    row = conn.execute(f"SELECT {_ACTION_COLUMNS} FROM curation_actions WHERE undone = 0 AND pending = 0"
                       " ORDER BY action_id DESC LIMIT 1").fetchone()
    return None if row is None else _action(row)


def pending_actions(conn: apsw.Connection) -> list[CurationAction]:
    """Answers recorded whose files were not all written (their process was killed), oldest first."""
    return [_action(row) for row in conn.execute(
        f"SELECT {_ACTION_COLUMNS} FROM curation_actions WHERE pending = 1 ORDER BY action_id")]


def finish_action(conn: apsw.Connection, action_id: int, files: list[dict]) -> None:
    """The answer's files are written: it is an ordinary undo record now (`files` as undo reads them)."""
    conn.execute("UPDATE curation_actions SET pending = 0, files = ? WHERE action_id = ?",
                 (json.dumps(files, ensure_ascii=False), action_id))


def abandon_action(conn: apsw.Connection, action_id: int, previous: CurationItem, now: str) -> None:
    """A pending answer whose files could not be written: the card as it was before, no record."""
    set_item_state(conn, previous.item_id, previous.status, previous.answer, previous.snoozed_until, now)
    conn.execute("DELETE FROM curation_actions WHERE action_id = ?", (action_id,))


def mark_undone(conn: apsw.Connection, action_id: int, now: str) -> None:
    conn.execute("UPDATE curation_actions SET undone = 1, undone_at = ? WHERE action_id = ?", (now, action_id))


# -- what the kinds read ------------------------------------------------------------------

@dataclass(frozen=True)
class LinkRow:
    """A reference as the importer stored it, with its source note."""

    note_id: str
    path: str
    title: str
    content_hash: str
    seq: int
    rule_id: str
    signal: str
    target_raw: str
    target_path: str
    is_embed: bool
    line: int
    evidence: str


def links_with_resolution(conn: apsw.Connection, resolution: str) -> list[LinkRow]:
    """References whose resolution is `resolution` (missing, ambiguous), by source path and order."""
    return [LinkRow(*row[:9], bool(row[9]), row[10], row[11]) for row in conn.execute(
        "SELECT n.note_id, n.path, n.title, n.content_hash, l.seq, l.rule_id, l.signal, l.target_raw, l.target_path,"
        " l.is_embed, l.line, l.evidence FROM note_links l JOIN notes n ON n.note_id = l.note_id"
        " WHERE l.resolution = ? ORDER BY n.path, l.seq", (resolution,))]


def linked_note_pairs(conn: apsw.Connection) -> set[tuple[str, str]]:
    """(a, b) with a < b for every two notes connected by an explicit or type-default edge, either way."""
    return {(min(s, t), max(s, t)) for s, t in conn.execute(
        "SELECT DISTINCT source_id, target_id FROM edges WHERE scope = 'note' AND provenance IN ('explicit', 'rule')"
        " AND source_id != target_id")}


def note_id_at_path(conn: apsw.Connection, path: str) -> str | None:
    row = conn.execute("SELECT note_id FROM notes WHERE path = ?", (path,)).fetchone()
    return row[0] if row else None
