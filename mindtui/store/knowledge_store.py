"""Query functions for knowledge items, their sources, the writer's decision log and their full text.

Only `mindtui.knowledge.writer` (and the nightly knowledge steps) write here. An agent's
connection reads filtered views of these tables (see `visibility`): writes name `main.`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Iterable

import apsw

from mindtui.store import visible_rank
from mindtui.store.visibility import item_open_to_agents
from mindtui.store.visibility import open_to_agents as open_to_agents_sql
from mindtui.text import analysis
from mindtui.text.names import exact_key, passage_text

DRAFT, CONFIRMED, SUPERSEDED = "draft", "confirmed", "superseded"
STATUSES = (DRAFT, CONFIRMED, SUPERSEDED)


def item_passage(title: str, body: str) -> str:
    """What gets embedded for an item (the sweep's passage of a chunk titled `title` with text `body`)."""
    return passage_text(title, "", body)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def item_content_hash(title: str, body: str) -> str:
    return sha256_text(item_passage(title, body))


@dataclass(frozen=True)
class KnowledgeItem:
    item_id: int
    type: str
    title: str
    body: str
    quote: str | None
    about_note_id: str | None
    about_topic: str | None
    status: str
    is_current: bool
    valid_from: str
    ended_at: str | None
    superseded_by: int | None
    stale_since: str | None
    source_type: str
    source_id: str
    source_note_id: str | None
    source_chunk_seq: int | None
    source_hash: str | None
    run_id: int | None
    confidence: float
    visibility: str
    importance: float
    importance_at: str
    statement_hash: str
    content_hash: str
    created_at: str
    updated_at: str

    def as_dict(self) -> dict:
        return dict(self.__dict__)


ITEM_FIELDS = tuple(KnowledgeItem.__dataclass_fields__)
_COLUMNS = ", ".join(f"k.{name}" for name in ITEM_FIELDS)
_WRITABLE = tuple(name for name in ITEM_FIELDS if name != "item_id")


def _item(row) -> KnowledgeItem:
    values = list(row)
    values[ITEM_FIELDS.index("is_current")] = bool(values[ITEM_FIELDS.index("is_current")])
    return KnowledgeItem(*values)


def get_item(conn: apsw.Connection, item_id: int) -> KnowledgeItem | None:
    row = conn.execute(f"SELECT {_COLUMNS} FROM knowledge_items k WHERE k.item_id = ?", (item_id,)).fetchone()
    return _item(row) if row else None


def items_by_id(conn: apsw.Connection, item_ids: list[int]) -> dict[int, KnowledgeItem]:
    if not item_ids:
        return {}
    marks = ",".join("?" * len(item_ids))
    return {row[0]: _item(row) for row in conn.execute(
        f"SELECT {_COLUMNS} FROM knowledge_items k WHERE k.item_id IN ({marks})", list(item_ids))}


def open_to_agents(conn: apsw.Connection, item_ids: list[int]) -> set[int]:
    """Those of the items an agent may see, by the flags stored at import."""
    marks = ",".join("?" * len(item_ids))
    return {row[0] for row in conn.execute(
        f"SELECT k.item_id FROM main.knowledge_items k WHERE k.item_id IN ({marks}) AND {item_open_to_agents('k')}",
        item_ids)} if item_ids else set()


def note_open_to_agents(conn: apsw.Connection, note_id: str) -> bool:
    return conn.execute(f"SELECT 1 FROM main.notes n WHERE n.note_id = ? AND {open_to_agents_sql('n')}",
                        (note_id,)).fetchone() is not None


def current_with_statement(conn: apsw.Connection, statement_hash: str) -> list[KnowledgeItem]:
    return [_item(row) for row in conn.execute(
        f"SELECT {_COLUMNS} FROM knowledge_items k WHERE k.statement_hash = ? AND k.is_current = 1"
        " ORDER BY k.item_id", (statement_hash,))]


def current_on_subject(conn: apsw.Connection, about_note_id: str | None, topic_key: str | None) -> list[KnowledgeItem]:
    """Current items about the same entity note, else the same topic (`topic_key`: its exact_key),
    else about nothing in particular (both NULL)."""
    if about_note_id is not None:
        rows = conn.execute(f"SELECT {_COLUMNS} FROM knowledge_items k WHERE k.is_current = 1 AND k.about_note_id = ?"
                            " ORDER BY k.item_id", (about_note_id,))
        return [_item(row) for row in rows]
    if topic_key is not None:
        rows = conn.execute(f"SELECT {_COLUMNS} FROM knowledge_items k WHERE k.is_current = 1"
                            " AND k.about_note_id IS NULL AND k.about_topic IS NOT NULL ORDER BY k.item_id")
        return _on_topic(map(_item, rows), topic_key)
    rows = conn.execute(f"SELECT {_COLUMNS} FROM knowledge_items k WHERE k.is_current = 1"
                        " AND k.about_note_id IS NULL AND k.about_topic IS NULL ORDER BY k.item_id")
    return [_item(row) for row in rows]


def _on_topic(items: Iterable[KnowledgeItem], topic_key: str) -> list[KnowledgeItem]:
    """The items whose free topic has this key: exact_key of the topic's text, which SQL cannot compute."""
    return [item for item in items if exact_key(item.about_topic or "") == topic_key]


def card_by_subject(conn: apsw.Connection, kind: str, subject_key: str) -> tuple[int, str] | None:
    """(card id, status) of the curation card of this kind and subject, if any."""
    row = conn.execute("SELECT item_id, status FROM main.curation_items WHERE kind = ? AND subject_key = ?",
                       (kind, subject_key)).fetchone()
    return (row[0], row[1]) if row else None


def list_items(conn: apsw.Connection, about_note_id: str | None = None, type_: str | None = None,
               status: str | None = None, current_only: bool = True, limit: int | None = None,
               source_note_id: str | None = None, topic_key: str | None = None) -> list[KnowledgeItem]:
    """Items by subject (an entity note, or a free topic by its exact_key), type, status; most
    important first, then newest."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM knowledge_items k WHERE (?1 IS NULL OR k.about_note_id = ?1)"
        " AND (?2 IS NULL OR k.type = ?2) AND (?3 IS NULL OR k.status = ?3) AND (?4 = 0 OR k.is_current = 1)"
        " AND (?5 IS NULL OR k.source_note_id = ?5) AND (?6 IS NULL OR k.about_topic IS NOT NULL)"
        " ORDER BY k.is_current DESC, k.importance DESC, k.item_id DESC LIMIT ?7",
        (about_note_id, type_, status, int(current_only), source_note_id, topic_key,
         -1 if limit is None or topic_key is not None else int(limit)))
    items = [_item(row) for row in rows]
    if topic_key is not None:
        items = _on_topic(items, topic_key)[:limit]
    return items


def items_of_note(conn: apsw.Connection, note_id: str, current_only: bool = True) -> list[KnowledgeItem]:
    """Items about the note or stated in it."""
    return [_item(row) for row in conn.execute(
        f"SELECT {_COLUMNS} FROM knowledge_items k WHERE (k.about_note_id = ?1 OR k.source_note_id = ?1)"
        " AND (?2 = 0 OR k.is_current = 1) ORDER BY k.is_current DESC, k.importance DESC, k.item_id DESC",
        (note_id, int(current_only)))]


def insert_item(conn: apsw.Connection, values: dict, fts: tuple[str, str, str]) -> int:
    """A new item (values: every column but item_id) and its full-text row (analysed title, body, quote)."""
    missing = [name for name in _WRITABLE if name not in values]
    if missing:
        raise ValueError(f"insert_item: missing {', '.join(missing)}")
    row = dict(values, is_current=int(values["is_current"]))
    conn.execute(f"INSERT INTO main.knowledge_items ({', '.join(_WRITABLE)}) VALUES ({', '.join('?' * len(_WRITABLE))})",
                 [row[name] for name in _WRITABLE])
    item_id = conn.last_insert_rowid()
    conn.execute("INSERT INTO main.knowledge_fts (rowid, title, body, quote) VALUES (?, ?, ?, ?)", (item_id, *fts))
    return item_id


def update_item(conn: apsw.Connection, item_id: int, now: str, **fields) -> None:
    """Set some columns of an item (updated_at too)."""
    unknown = [name for name in fields if name not in _WRITABLE]
    if unknown:
        raise ValueError(f"update_item: no column {', '.join(unknown)}")
    fields["updated_at"] = now
    if "is_current" in fields:
        fields["is_current"] = int(fields["is_current"])
    assignments = ", ".join(f"{name} = ?" for name in fields)
    conn.execute(f"UPDATE main.knowledge_items SET {assignments} WHERE item_id = ?", [*fields.values(), item_id])


def end_item(conn: apsw.Connection, item_id: int, superseded_by: int | None, now: str) -> None:
    """No longer current (superseded or retracted): kept as history, out of the full text."""
    update_item(conn, item_id, now, status=SUPERSEDED, is_current=False, ended_at=now, superseded_by=superseded_by)
    conn.execute("DELETE FROM main.knowledge_fts WHERE rowid = ?", (item_id,))


def refresh_fts(conn: apsw.Connection, item_id: int) -> None:
    """The item's full-text row as it is now: written anew when it is current, gone when not (or when there is no item)."""
    conn.execute("DELETE FROM main.knowledge_fts WHERE rowid = ?", (item_id,))
    item = get_item(conn, item_id)
    if item is not None and item.is_current:
        conn.execute("INSERT INTO main.knowledge_fts (rowid, title, body, quote) VALUES (?, ?, ?, ?)",
                     (item_id, *fts_text(item.title, item.body, item.quote)))


def fts_text(title: str, body: str, quote: str | None) -> tuple[str, str, str]:
    """The analysed (stemmed) columns of an item's full-text row, in the language of its text."""
    lang = analysis.detect_language(" ".join([title, body, quote or ""]))
    return analysis.analyze(title, lang), analysis.analyze(body, lang), analysis.analyze(quote or "", lang)


def add_source(conn: apsw.Connection, item_id: int, source_type: str, source_id: str, now: str) -> bool:
    """Record that a source stated the item; False when it had already."""
    conn.execute("INSERT INTO main.knowledge_sources (item_id, source_type, source_id, seen_at) VALUES (?, ?, ?, ?)"
                 " ON CONFLICT DO NOTHING", (item_id, source_type, source_id, now))
    return conn.changes() > 0


@dataclass(frozen=True)
class SourceRow:
    source_type: str
    source_id: str
    seen_at: str


def sources_of(conn: apsw.Connection, item_id: int) -> list[SourceRow]:
    return [SourceRow(*row) for row in conn.execute(
        "SELECT source_type, source_id, seen_at FROM knowledge_sources WHERE item_id = ? ORDER BY seen_at, source_type, source_id",
        (item_id,))]


def record_decision(conn: apsw.Connection, now: str, source_type: str, source_id: str, proposal: str,
                    decision: str, reason: str, item_id: int | None, card_id: int | None) -> int:
    conn.execute("INSERT INTO main.knowledge_decisions (decided_at, source_type, source_id, proposal, decision, reason,"
                 " item_id, card_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                 (now, source_type, source_id, proposal, decision, reason, item_id, card_id))
    return conn.last_insert_rowid()


@dataclass(frozen=True)
class DecisionRow:
    decision_id: int
    decided_at: str
    source_type: str
    source_id: str
    proposal: str
    decision: str
    reason: str
    item_id: int | None
    card_id: int | None

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def decisions_of(conn: apsw.Connection, item_ids: list[int]) -> list[DecisionRow]:
    if not item_ids:
        return []
    marks = ",".join("?" * len(item_ids))
    return [DecisionRow(*row) for row in conn.execute(
        "SELECT decision_id, decided_at, source_type, source_id, proposal, decision, reason, item_id, card_id"
        f" FROM knowledge_decisions WHERE item_id IN ({marks}) ORDER BY decision_id", list(item_ids))]


def recent_decisions(conn: apsw.Connection, limit: int = 50) -> list[DecisionRow]:
    return [DecisionRow(*row) for row in conn.execute(
        "SELECT decision_id, decided_at, source_type, source_id, proposal, decision, reason, item_id, card_id"
        " FROM knowledge_decisions ORDER BY decision_id DESC LIMIT ?", (int(limit),))]


def predecessors(conn: apsw.Connection, item_id: int) -> list[KnowledgeItem]:
    """The items this one superseded, directly or further back, newest first."""
    return [_item(row) for row in conn.execute(
        "WITH RECURSIVE back(id, depth) AS (SELECT item_id, 1 FROM knowledge_items WHERE superseded_by = ?1"
        " UNION SELECT k.item_id, back.depth + 1 FROM knowledge_items k JOIN back ON k.superseded_by = back.id"
        " WHERE back.depth < 1000)"
        f" SELECT {_COLUMNS} FROM back JOIN knowledge_items k ON k.item_id = back.id ORDER BY back.depth, k.item_id",
        (item_id,))]


def successors(conn: apsw.Connection, item_id: int) -> list[KnowledgeItem]:
    """The items that superseded this one, in order (the last is current unless retracted)."""
    out: list[KnowledgeItem] = []
    seen = {item_id}
    item = get_item(conn, item_id)
    while item is not None and item.superseded_by is not None and item.superseded_by not in seen:
        seen.add(item.superseded_by)
        item = get_item(conn, item.superseded_by)
        if item is not None:
            out.append(item)
    return out


def note_names(conn: apsw.Connection, note_ids: list[str]) -> dict[str, tuple[str, str, str]]:
    """note_id -> (path, title, type) for the notes that exist (and the connection may see)."""
    ids = sorted({n for n in note_ids if n})
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    return {nid: (path, title, type_) for nid, path, title, type_ in conn.execute(
        f"SELECT note_id, path, title, type FROM notes WHERE note_id IN ({marks})", ids)}


@dataclass(frozen=True)
class SourceNote:
    note_id: str
    path: str
    ai_processing: bool
    private: bool


def source_note(conn: apsw.Connection, note_id: str) -> SourceNote | None:
    row = conn.execute("SELECT note_id, path, ai_processing, private FROM main.notes WHERE note_id = ?",
                       (note_id,)).fetchone()
    return SourceNote(row[0], row[1], bool(row[2]), bool(row[3])) if row else None


def chunk_hash(conn: apsw.Connection, note_id: str, seq: int) -> str | None:
    row = conn.execute("SELECT content_hash FROM main.chunks WHERE note_id = ? AND seq = ?", (note_id, seq)).fetchone()
    return row[0] if row else None


# -- vectors and search -------------------------------------------------------------------

def item_vectors(conn: apsw.Connection, item_ids: list[int], model_id: str) -> dict[int, bytes]:
    """item_id -> stored float32 blob of its text, for the items that have one."""
    if not item_ids:
        return {}
    marks = ",".join("?" * len(item_ids))
    return dict(conn.execute(
        "SELECT k.item_id, v.embedding FROM knowledge_items k JOIN embeddings e ON e.model_id = ?"
        " AND e.content_hash = k.content_hash JOIN vec_chunks v ON v.rowid = e.embedding_id"
        f" WHERE k.item_id IN ({marks})", (model_id, *item_ids)))


def current_item_vectors(conn: apsw.Connection, model_id: str) -> list[tuple[int, bytes]]:
    """(item_id, float32 blob) of every current item with a vector (the connection's audience applies)."""
    return list(conn.execute(
        "SELECT k.item_id, v.embedding FROM knowledge_items k JOIN embeddings e ON e.model_id = ?"
        " AND e.content_hash = k.content_hash JOIN vec_chunks v ON v.rowid = e.embedding_id"
        " WHERE k.is_current = 1 ORDER BY k.item_id", (model_id,)))


def item_vector_count(conn: apsw.Connection, model_id: str) -> int:
    """Vectors in the shared vector table that belong to current items (every audience's: the KNN sees them all)."""
    # CROSS JOIN: from the items (few) to their vectors, never a scan of every vector (135 ms at 1M).
    return conn.execute("SELECT count(*) FROM main.knowledge_items k CROSS JOIN embeddings e ON e.model_id = ?"
                        " AND e.content_hash = k.content_hash WHERE k.is_current = 1", (model_id,)).fetchone()[0]


def has_vector(conn: apsw.Connection, model_id: str, content_hash: str) -> bool:
    return conn.execute("SELECT 1 FROM embeddings WHERE model_id = ? AND content_hash = ?",
                        (model_id, content_hash)).fetchone() is not None


def fts_items(conn: apsw.Connection, expression: str, limit: int) -> list[tuple[int, float]]:
    """(item_id, bm25: lower is better) of current items matching, best first (for an agent, BM25
    over the items it sees: store.visible_rank)."""
    function = visible_rank.ranking_function(conn, "knowledge_fts")
    return [(item_id, score) for item_id, score in conn.execute(
        f"SELECT f.rowid, {function}(knowledge_fts, 5.0, 1.0, 1.0) AS rank FROM knowledge_fts f"
        " JOIN knowledge_items k ON k.item_id = f.rowid WHERE knowledge_fts MATCH ? AND k.is_current = 1"
        " ORDER BY rank LIMIT ?", (expression, int(limit)))]


def item_counts(conn: apsw.Connection) -> dict[str, int]:
    row = conn.execute(
        "SELECT count(*) FILTER (WHERE is_current = 1), count(*) FILTER (WHERE is_current = 1 AND status = 'draft'),"
        " count(*) FILTER (WHERE is_current = 1 AND status = 'confirmed'), count(*) FILTER (WHERE is_current = 0),"
        " count(*) FILTER (WHERE is_current = 1 AND stale_since IS NOT NULL) FROM knowledge_items").fetchone()
    return {"knowledge_current": row[0], "knowledge_draft": row[1], "knowledge_confirmed": row[2],
            "knowledge_history": row[3], "knowledge_stale": row[4]}


def decision_json(value) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
