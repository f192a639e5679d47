"""Query functions for the graph signals: change edges, search pairs, degrees, a note's edges."""

from __future__ import annotations

import json
from dataclasses import dataclass

import apsw

from mindtui.store.edges import EdgeRow, insert_edges
from mindtui.store.note_vectors import stored_vectors
from mindtui.store.visibility import hidden_by_flags, model_readable

CHANGE_SIGNAL = "change"


@dataclass(frozen=True)
class NoteRef:
    note_id: str
    path: str
    title: str
    aliases: list[str]


def all_note_refs(conn: apsw.Connection) -> list[NoteRef]:
    return [NoteRef(nid, path, title, json.loads(aliases)) for nid, path, title, aliases in
            conn.execute("SELECT note_id, path, title, aliases FROM notes ORDER BY path")]


def hidden_note_ids(conn: apsw.Connection) -> set[str]:
    """The notes agents may not see, by the flags stored at import (a few: the partial index)."""
    return {nid for (nid,) in conn.execute(f"SELECT n.note_id FROM main.notes n WHERE {hidden_by_flags('n')}")}


def replace_change_edges(conn: apsw.Connection, edges: list[EdgeRow]) -> None:
    """The change graph is rebuilt whole from the work logs: one transaction, old edges out, new in."""
    with conn:
        conn.execute("DELETE FROM edges WHERE signal = ?", (CHANGE_SIGNAL,))
        insert_edges(conn, edges)


def prune_search_pairs(conn: apsw.Connection) -> int:
    """Search pairs whose notes no longer exist."""
    with conn:
        conn.execute("DELETE FROM search_pairs WHERE note_a NOT IN (SELECT note_id FROM notes)"
                     " OR note_b NOT IN (SELECT note_id FROM notes)")
        return conn.changes()


@dataclass(frozen=True)
class EdgeView:
    """An edge seen from one note: the other end, and how they are connected."""

    other_id: str
    direction: str  # out | in
    kind: str
    provenance: str
    rule_id: str
    confidence: float
    signal: str
    weight: float
    evidence: str | None


def note_edges(conn: apsw.Connection, note_id: str) -> list[EdgeView]:
    """Every note-level edge that touches the note (structure edges are chunk-level and left out)."""
    rows = conn.execute(
        "SELECT target_id, 'out', kind, provenance, rule_id, confidence, signal, weight, evidence FROM edges"
        " WHERE scope = 'note' AND source_id = ?1 AND target_id != ?1"
        " UNION ALL "
        "SELECT source_id, 'in', kind, provenance, rule_id, confidence, signal, weight, evidence FROM edges"
        " WHERE scope = 'note' AND target_id = ?1 AND source_id != ?1",
        (note_id,))
    return [EdgeView(*row) for row in rows]


def search_pairs_of(conn: apsw.Connection, note_id: str, limit: int = 200) -> list[tuple[str, int, str]]:
    """(other note, weight, last seen) for the note's strongest search pairs."""
    return list(conn.execute(
        "SELECT CASE WHEN note_a = ?1 THEN note_b ELSE note_a END, weight, last_seen FROM search_pairs"
        " WHERE note_a = ?1 OR note_b = ?1 ORDER BY weight DESC, last_seen DESC LIMIT ?2", (note_id, limit)))


def recent_searches_with(conn: apsw.Connection, note_id: str, limit: int = 500) -> list[tuple[str, list[str]]]:
    """(query, result note ids) of the latest owner searches that returned the note (the ones that
    teach search pairs): one scan, for evidence. An agent's connection sees no owner searches."""
    return [(query, json.loads(results)) for query, results in conn.execute(
        "SELECT query, results FROM search_log WHERE audience = 'owner'"
        " AND EXISTS (SELECT 1 FROM json_each(results) WHERE value = ?) ORDER BY search_id DESC LIMIT ?",
        (note_id, limit))]


def notes_by_id(conn: apsw.Connection, note_ids: list[str]) -> dict[str, NoteRef]:
    if not note_ids:
        return {}
    marks = ",".join("?" * len(note_ids))
    return {nid: NoteRef(nid, path, title, json.loads(aliases)) for nid, path, title, aliases in conn.execute(
        f"SELECT note_id, path, title, aliases FROM notes WHERE note_id IN ({marks})", note_ids)}


def note_vectors(conn: apsw.Connection, note_id: str, model_id: str | None, limit: int = 16) -> list[bytes]:
    """The stored vectors of a note's first chunks (raw float32 blobs)."""
    return [row[0] for row in conn.execute(
        "SELECT v.embedding FROM chunks c JOIN embeddings e ON e.content_hash = c.content_hash AND e.model_id = ?"
        " JOIN vec_chunks v ON v.rowid = e.embedding_id WHERE c.note_id = ? ORDER BY c.seq LIMIT ?",
        (model_id, note_id, limit))]


def first_chunk_vectors(conn: apsw.Connection, note_ids: list[str], model_id: str, limit: int = 16
                        ) -> dict[str, list[bytes]]:
    """note_vectors for several notes at once: note id -> its first chunks' vector blobs."""
    if not note_ids:
        return {}
    marks = ",".join("?" * len(note_ids))
    owners = conn.execute(
        "SELECT note_id, embedding_id FROM (SELECT c.note_id, e.embedding_id,"
        " row_number() OVER (PARTITION BY c.note_id ORDER BY c.seq) AS place FROM chunks c"
        " CROSS JOIN embeddings e ON e.content_hash = c.content_hash AND e.model_id = ?"
        f" WHERE c.note_id IN ({marks})) WHERE place <= ?", (model_id, *note_ids, limit)).fetchall()
    vectors = stored_vectors(conn, sorted({e for _, e in owners}))
    out: dict[str, list[bytes]] = {}
    for note_id, embedding_id in owners:
        if embedding_id in vectors:
            out.setdefault(note_id, []).append(vectors[embedding_id].tobytes())
    return out


def embedding_notes(conn: apsw.Connection, similarities: dict[int, float]) -> dict[str, float]:
    """Embedding hits -> note id -> best cosine (notes sharing a text all count)."""
    if not similarities:
        return {}
    marks = ",".join("?" * len(similarities))
    best: dict[str, float] = {}
    for note_id, embedding_id in conn.execute(
            "SELECT c.note_id, e.embedding_id FROM embeddings e JOIN chunks c ON c.content_hash = e.content_hash"
            " JOIN notes n ON n.note_id = c.note_id"
            f" WHERE e.embedding_id IN ({marks}) AND {model_readable('n')}", list(similarities)):
        best[note_id] = max(best.get(note_id, -1.0), similarities[embedding_id])
    return best


def chunk_hit_count(conn: apsw.Connection, embedding_ids: list[int]) -> int:
    """How many of these vectors are of chunks the reader sees and a model may read (not of
    knowledge items, not of notes hidden from the reader)."""
    if not embedding_ids:
        return 0
    marks = ",".join("?" * len(embedding_ids))
    return conn.execute(
        "SELECT count(DISTINCT e.embedding_id) FROM embeddings e JOIN chunks c ON c.content_hash = e.content_hash"
        f" JOIN notes n ON n.note_id = c.note_id WHERE e.embedding_id IN ({marks}) AND {model_readable('n')}",
        list(embedding_ids)).fetchone()[0]


def signal_counts(conn: apsw.Connection, confirmed_weight: int) -> dict[str, int]:
    row = conn.execute(
        "SELECT"
        " count(*) FILTER (WHERE provenance = 'explicit' AND kind = 'links_to'),"
        " count(*) FILTER (WHERE provenance = 'explicit' AND kind != 'links_to'),"
        " count(*) FILTER (WHERE provenance = 'rule'),"
        # A pair's change edges of several work logs are one pair.
        " count(DISTINCT CASE WHEN signal = ? THEN source_id || char(0) || target_id END)"
        " FROM edges WHERE scope = 'note'", (CHANGE_SIGNAL,)).fetchone()
    pairs = conn.execute("SELECT count(*), count(*) FILTER (WHERE weight >= ?) FROM search_pairs",
                         (confirmed_weight,)).fetchone()
    searches = conn.execute("SELECT count(*) FROM search_log").fetchone()[0]
    return {"links": row[0], "relations": row[1], "type_defaults": row[2], "change": row[3],
            "search_pairs": pairs[0], "search_pairs_confirmed": pairs[1], "searches_logged": searches}


def most_connected(conn: apsw.Connection, signal: str, limit: int, confirmed_weight: int) -> list[tuple[str, float]]:
    """(node id, summed weight) of the best-connected notes for one signal; both ends count."""
    if signal == "search":
        sql = ("SELECT node, sum(weight) AS w, count(*) AS d FROM ("
               " SELECT note_a AS node, weight FROM search_pairs WHERE weight >= ?1"
               " UNION ALL SELECT note_b, weight FROM search_pairs WHERE weight >= ?1)"
               " GROUP BY node ORDER BY d DESC, w DESC, node LIMIT ?2")
        return [(node, d) for node, _w, d in conn.execute(sql, (confirmed_weight, limit))]
    where = {"links": "provenance = 'explicit' AND kind = 'links_to'",
             "relations": "provenance = 'explicit' AND kind != 'links_to'",
             "type_defaults": "provenance = 'rule'", "change": f"signal = '{CHANGE_SIGNAL}'"}[signal]
    sql = (f"SELECT node, count(DISTINCT other) AS d FROM ("
           f" SELECT source_id AS node, target_id AS other FROM edges WHERE scope = 'note' AND {where}"
           f" UNION ALL SELECT target_id, source_id FROM edges WHERE scope = 'note' AND {where})"
           f" GROUP BY node ORDER BY d DESC, node LIMIT ?")
    return list(conn.execute(sql, (limit,)))


def link_neighbours(conn: apsw.Connection, note_ids: list[str]) -> dict[str, set[str]]:
    """Note -> the indexed notes it links to or is linked from (explicit links, either direction)."""
    if not note_ids:
        return {}
    marks = ",".join("?" * len(note_ids))
    out: dict[str, set[str]] = {}
    wanted = set(note_ids)
    for source, target in conn.execute(
            "SELECT e.source_id, e.target_id FROM edges e JOIN notes t ON t.note_id = e.target_id"
            " JOIN notes s ON s.note_id = e.source_id WHERE e.scope = 'note' AND e.provenance = 'explicit'"
            f" AND e.source_id != e.target_id AND (e.source_id IN ({marks}) OR e.target_id IN ({marks}))",
            (*note_ids, *note_ids)):
        if source in wanted:
            out.setdefault(source, set()).add(target)
        if target in wanted:
            out.setdefault(target, set()).add(source)
    return out
