"""What an answer to a curation card changed in the knowledge tables, so `curate undo` can put it back.

A knowledge card's answer goes through the writer (or, for a stale card, its own change): it may
add items, end one (superseded), confirm one, add a source. While the answer is planned,
temporary triggers on its connection note each item row before its first change, each item
added and each source row added (`recording`); the answer's undo record keeps the result
(curation_actions.knowledge, migration 0023). `put_back` then ends the items the answer added
(kept as history, as every item that no longer holds), puts back the columns it changed and
takes out the source rows it gave items that were there before. `conflict` says why not, when
something changed those columns since (a later answer, an edit, a nightly supersede).

Temporary triggers see only this connection's writes: an import on another connection at the
same moment is not recorded (the answer lock keeps other answers out).
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Iterator

import apsw

from mindtui.store import knowledge_store as items

_TABLE = "knowledge_answer_journal"
_TRIGGERS = ("knowledge_journal_update", "knowledge_journal_insert", "knowledge_journal_source")
# Changed by the nightly steps on their own (decay, re-reading a moved callout): restored with the
# rest, but a later change of them does not stop an undo.
_DRIFTING = frozenset({"updated_at", "importance", "importance_at", "source_chunk_seq"})


@contextmanager
def recording(conn: apsw.Connection) -> Iterator[dict]:
    """Record the knowledge changes made on `conn` inside the block; the dict yielded is filled
    when the block ends: {"added": [item ids], "changed": {item id: {column: [before, after]}},
    "sources": [[item id, source type, source id]]}, empty when nothing changed."""
    journal: dict = {}
    conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS {_TABLE} (seq INTEGER PRIMARY KEY, what TEXT NOT NULL,"
                 " item_id INTEGER NOT NULL, data TEXT)")
    conn.execute(f"DELETE FROM temp.{_TABLE}")
    old_row = "json_object(" + ", ".join(f"'{name}', OLD.{name}" for name in items.ITEM_FIELDS) + ")"
    update, insert, source = _TRIGGERS
    try:
        conn.execute(f"CREATE TEMP TRIGGER {update} BEFORE UPDATE ON main.knowledge_items BEGIN"
                     f" INSERT INTO {_TABLE} (what, item_id, data) VALUES ('update', OLD.item_id, {old_row}); END")
        conn.execute(f"CREATE TEMP TRIGGER {insert} AFTER INSERT ON main.knowledge_items BEGIN"
                     f" INSERT INTO {_TABLE} (what, item_id) VALUES ('insert', NEW.item_id); END")
        conn.execute(f"CREATE TEMP TRIGGER {source} AFTER INSERT ON main.knowledge_sources BEGIN"
                     f" INSERT INTO {_TABLE} (what, item_id, data) VALUES"
                     " ('source', NEW.item_id, json_array(NEW.source_type, NEW.source_id)); END")
        yield journal
        journal.update(_read(conn))
    finally:
        for name in _TRIGGERS:
            conn.execute(f"DROP TRIGGER IF EXISTS temp.{name}")
        conn.execute(f"DELETE FROM temp.{_TABLE}")


def _read(conn: apsw.Connection) -> dict:
    added: list[int] = []
    before: dict[int, dict] = {}
    sources: list[list] = []
    for what, item_id, data in conn.execute(f"SELECT what, item_id, data FROM temp.{_TABLE} ORDER BY seq"):
        if what == "insert":
            added.append(item_id)
        elif what == "update" and item_id not in added:
            before.setdefault(item_id, json.loads(data))  # the row as it was before the answer's first change
        elif what == "source" and item_id not in added:
            sources.append([item_id, *json.loads(data)])
    changed = {}
    for item_id, old in before.items():
        now = _row(conn, item_id)
        columns = {name: [old[name], now[name]] for name in old if name != "updated_at" and old[name] != now[name]}
        if columns:
            changed[str(item_id)] = columns
    if not (added or changed or sources):
        return {}
    return {"added": added, "changed": changed, "sources": sources}


def _row(conn: apsw.Connection, item_id: int) -> dict:
    item = items.get_item(conn, item_id)
    row = item.as_dict() if item else {}
    return {k: int(v) if isinstance(v, bool) else v for k, v in row.items()}


def conflict(conn: apsw.Connection, journal: dict) -> str | None:
    """Why the answer's knowledge changes cannot be put back (None: they can)."""
    for item_id in journal.get("added", []):
        now = _row(conn, item_id)
        if now and not now["is_current"]:
            return f"item #{item_id}, which it added, is no longer current (superseded since?)"
    for key, columns in journal.get("changed", {}).items():
        now = _row(conn, int(key))
        moved = [name for name, (_, after) in columns.items() if name not in _DRIFTING and now.get(name) != after]
        if moved:
            return f"item #{key} changed since ({', '.join(sorted(moved))})"
    return None


def put_back(conn: apsw.Connection, journal: dict, card_id: int, now: str) -> list[str]:
    """Undo the recorded changes (inside the caller's transaction); what was done, for the message."""
    done = []
    for item_id in journal.get("added", []):
        if items.get_item(conn, item_id) is not None:
            items.end_item(conn, item_id, None, now)  # out of the full text too
            _log(conn, now, item_id, card_id, "the item it added ends (kept as history)")
            done.append(f"item #{item_id} retracted")
    for key, columns in journal.get("changed", {}).items():
        item_id = int(key)
        items.update_item(conn, item_id, now, **{name: before for name, (before, _) in columns.items()})
        items.refresh_fts(conn, item_id)
        _log(conn, now, item_id, card_id, "the item is as before it")
        done.append(f"item #{item_id} as before" + (" (current again)" if "is_current" in columns else ""))
    for item_id, source_type, source_id in journal.get("sources", []):
        conn.execute("DELETE FROM main.knowledge_sources WHERE item_id = ? AND source_type = ? AND source_id = ?",
                     (item_id, source_type, source_id))
    if journal.get("sources") and not journal.get("changed"):
        done.append(f"{len(journal['sources'])} source(s) it counted taken out")
    return done


def _log(conn: apsw.Connection, now: str, item_id: int, card_id: int, what: str) -> None:
    items.record_decision(conn, now, "owner", "owner", json.dumps({"undo": card_id}), "update",
                          f"the owner undid the answer to card {card_id}: {what}", item_id, card_id)
