"""Query functions for search: full-text candidates, vector hits to chunks, note facts, the search log."""

from __future__ import annotations

import datetime
import itertools
import json
from dataclasses import dataclass

import apsw

from mindtui.store import fts_champions, fts_parallel, fts_rows, fts_split, fts_weightless, visible_rank
from mindtui.store.meta import SEARCH_WATERMARK_KEY
from mindtui.store.visibility import model_readable

FTS_WEIGHTS = fts_rows.COLUMN_WEIGHTS


@dataclass(frozen=True)
class ChunkHit:
    chunk_id: int | None  # None: the note matched as a whole (its title), not by one chunk
    note_id: str
    score: float  # bm25 (lower is better) or cosine similarity (higher is better)


@dataclass(frozen=True)
class NoteFacts:
    note_id: str
    path: str
    title: str
    type: str
    aliases: list[str]
    tags: list[str]
    retriever_weight: float
    private: bool
    ai_processing: bool  # False: no model may read the note's text (the reranker included)


def _filters(note_type: str | None, tag: str | None, path_prefix: str | None) -> tuple[str, list]:
    sql, args = "", []
    if note_type:
        sql += " AND n.type = ?"
        args.append(note_type.lower())
    if tag:
        sql += " AND EXISTS (SELECT 1 FROM json_each(n.tags) WHERE json_each.value = ?)"
        args.append(tag.lower().lstrip("#"))
    if path_prefix:
        # A case-sensitive prefix, as vault paths are (LIKE would ignore case and treat _ and % specially).
        sql += " AND substr(n.path, 1, ?) = ?"
        prefix = path_prefix.lstrip("/")
        args.extend([len(prefix), prefix])
    return sql, args


def fts_chunks(conn: apsw.Connection, expression: str, limit: int, note_type: str | None = None,
               tag: str | None = None, path_prefix: str | None = None, restricted: bool = False) -> list[ChunkHit]:
    """restricted: the connection hides notes (an agent's). Its ranking is BM25 over the rows it
    sees (store.visible_rank: hidden rows count neither in the statistics nor in the top `limit`).
    For the owner, words in half the rows or more are left out of the ranked query while the
    others find `limit` rows (store.fts_weightless: the same order, a second less at 1M chunks)."""
    if not restricted:
        fts_champions.seed_counts(conn)
        lighter = fts_weightless.without_weightless(conn, expression)
        if lighter is not None:
            hits = _fts_chunks(conn, lighter, limit, note_type, tag, path_prefix, restricted)
            if len(hits) == limit:
                return hits
    return _fts_chunks(conn, expression, limit, note_type, tag, path_prefix, restricted)


def _fts_chunks(conn: apsw.Connection, expression: str, limit: int, note_type: str | None, tag: str | None,
                path_prefix: str | None, restricted: bool) -> list[ChunkHit]:
    function = visible_rank.ranking_function(conn) if restricted else "bm25"
    weights = ", ".join(map(str, FTS_WEIGHTS))
    if not (note_type or tag or path_prefix):
        # No join per matching row. The ranking is called as a function, not through `rank MATCH`:
        # 2.5x faster at 1M chunks (1.0 s against 2.4-3.7 s for a word in every chunk).
        def rank(match: str, count: int) -> list[tuple[int, float]]:
            if not restricted:  # the owner's, on several threads for a large table (store.fts_parallel)
                return fts_parallel.ranked(conn, f"{function}(chunks_fts, {weights})", match, count)
            return conn.execute(
                f"SELECT rowid, {function}(chunks_fts, {weights}) AS score FROM chunks_fts WHERE chunks_fts MATCH ?"
                " ORDER BY score LIMIT ?", (match, count)).fetchall()

        # The owner's: common words ranked only where rare ones match, answers kept (store.fts_split).
        rows = rank(expression, limit) if restricted else fts_split.ranked(conn, expression, limit, rank)
        rows = [(rowid, score) for rowid, score in rows if score != visible_rank.HIDDEN_SCORE]
        if not rows:
            return []
        owners = _row_owners(conn, [rowid for rowid, _ in rows], restricted)
        # A negative rowid is a note's anchor-text row (store.anchors): a hit of the whole note.
        return [ChunkHit(rowid if rowid > 0 else None, owners[rowid], score) for rowid, score in rows
                if rowid in owners]
    # With filters the ranking joins chunks: anchor rows take no part.
    where, args = _filters(note_type, tag, path_prefix)
    rows = conn.execute(
        f"SELECT c.chunk_id, c.note_id, {function}(chunks_fts, {weights}) AS rank FROM chunks_fts"
        " JOIN chunks c ON c.chunk_id = chunks_fts.rowid JOIN notes n ON n.note_id = c.note_id"
        f" WHERE chunks_fts MATCH ?{where} ORDER BY rank LIMIT ?",
        (expression, *args, limit),
    )
    return [ChunkHit(*row) for row in rows]


def _row_owners(conn: apsw.Connection, rowids: list[int], restricted: bool = False) -> dict[int, str]:
    """Full-text rowid -> note id: chunks by chunk_id, anchor rows (negative) by -anchor_id. Both
    read through `chunks` and `notes`, which an agent's connection filters."""
    owners: dict[int, str] = {}
    chunk_ids = [r for r in rowids if r > 0]
    anchor_ids = [-r for r in rowids if r < 0]
    if chunk_ids:
        owners.update(conn.execute(
            f"SELECT chunk_id, note_id FROM chunks WHERE chunk_id IN ({','.join('?' * len(chunk_ids))})", chunk_ids))
    if restricted:  # the rows the ranking just left out (an anchor row a hidden note lent words to)
        hidden = visible_rank.hidden_rowids(conn)
        anchor_ids = [a for a in anchor_ids if -a not in hidden]
    if anchor_ids:
        owners.update((-anchor_id, note_id) for anchor_id, note_id in conn.execute(
            "SELECT a.anchor_id, a.note_id FROM note_anchors a JOIN notes n ON n.note_id = a.note_id"
            f" WHERE a.anchor_id IN ({','.join('?' * len(anchor_ids))})", anchor_ids))
    return owners


def chunks_for_embeddings(conn: apsw.Connection, similarities: dict[int, float], note_type: str | None = None,
                          tag: str | None = None, path_prefix: str | None = None) -> list[ChunkHit]:
    """Vector hits (embedding id -> cosine) as chunk hits, best first."""
    if not similarities:
        return []
    where, args = _filters(note_type, tag, path_prefix)
    marks = ",".join("?" * len(similarities))
    rows = conn.execute(
        "SELECT c.chunk_id, c.note_id, e.embedding_id FROM embeddings e"
        " JOIN chunks c ON c.content_hash = e.content_hash JOIN notes n ON n.note_id = c.note_id"
        f" WHERE e.embedding_id IN ({marks}) AND {model_readable('n')}{where}",
        (*similarities, *args),
    )
    hits = [ChunkHit(chunk_id, note_id, similarities[embedding_id]) for chunk_id, note_id, embedding_id in rows]
    return sorted(hits, key=lambda h: (-h.score, h.chunk_id))


def chunk_vectors_passing(model_id: str, note_type: str | None = None, tag: str | None = None,
                          path_prefix: str | None = None) -> tuple[str, list]:
    """The subquery (SQL, arguments) of the embedding ids of the model's chunk vectors that the
    reader sees, a model may read and the filters let through (for vectors.knn_within)."""
    where, args = _filters(note_type, tag, path_prefix)
    return ("SELECT e.embedding_id FROM embeddings e JOIN chunks c ON c.content_hash = e.content_hash"
            f" JOIN notes n ON n.note_id = c.note_id WHERE e.model_id = ? AND {model_readable('n')}{where}",
            [model_id, *args])


def note_facts(conn: apsw.Connection, note_ids: list[str]) -> dict[str, NoteFacts]:
    if not note_ids:
        return {}
    marks = ",".join("?" * len(note_ids))
    rows = conn.execute(
        "SELECT note_id, path, title, type, aliases, tags, retriever_weight, private, ai_processing FROM notes"
        f" WHERE note_id IN ({marks})", note_ids)
    return {r[0]: NoteFacts(r[0], r[1], r[2], r[3], json.loads(r[4]), json.loads(r[5]), r[6], bool(r[7]), bool(r[8]))
            for r in rows}


def retriever_weights(conn: apsw.Connection, note_ids: list[str]) -> dict[str, float]:
    if not note_ids:
        return {}
    marks = ",".join("?" * len(note_ids))
    return dict(conn.execute(f"SELECT note_id, retriever_weight FROM notes WHERE note_id IN ({marks})", note_ids))


def chunk_texts(conn: apsw.Connection, chunk_ids: list[int]) -> dict[int, tuple[str, str]]:
    """chunk_id -> (heading_path, text)."""
    if not chunk_ids:
        return {}
    marks = ",".join("?" * len(chunk_ids))
    return {cid: (heading, text) for cid, heading, text in conn.execute(
        f"SELECT chunk_id, heading_path, text FROM chunks WHERE chunk_id IN ({marks})", chunk_ids)}


def first_chunks(conn: apsw.Connection, note_ids: list[str]) -> dict[str, int]:
    """Each note's first chunk (the snippet of a note no retriever matched by a chunk)."""
    if not note_ids:
        return {}
    marks = ",".join("?" * len(note_ids))
    return dict(conn.execute(f"SELECT note_id, chunk_id FROM chunks WHERE note_id IN ({marks}) AND seq = "
                             "(SELECT min(seq) FROM chunks c2 WHERE c2.note_id = chunks.note_id)", note_ids))


def title_matches(conn: apsw.Connection) -> list[tuple[str, str, list[str]]]:
    """(note_id, title, aliases) of every note, for the names a longer query mentions."""
    return [(nid, title, json.loads(aliases)) for nid, title, aliases in
            conn.execute("SELECT note_id, title, aliases FROM notes")]


def exact_name_matches(conn: apsw.Connection, key: str) -> list[str]:
    """The notes whose title or an alias is `key` (an exact_key), from the name index: those
    whose title it is first (a note titled "Obsidian" before ten people with the alias Obsidian,
    as Obsidian's switcher puts them), then by id. `notes`, not `main.notes`: an agent's view
    hides what the agent may not see."""
    return [row[0] for row in conn.execute(
        "SELECT k.note_id FROM note_names k JOIN notes n ON n.note_id = k.note_id"
        " WHERE k.key = ? AND k.how IN ('title', 'alias') GROUP BY k.note_id"
        " ORDER BY MIN(k.how != 'title'), k.note_id", (key,))]


def has_vectors(conn: apsw.Connection, model_id: str | None = None) -> bool:
    """Whether any vector exists for the model (None: for any model); an index probe, not a
    count: this runs per search."""
    if model_id is None:
        return conn.execute("SELECT 1 FROM embeddings LIMIT 1").fetchone() is not None
    return conn.execute("SELECT 1 FROM embeddings WHERE model_id = ? LIMIT 1", (model_id,)).fetchone() is not None


def log_search(conn: apsw.Connection, query: str, mode: str, note_ids: list[str], audience: str,
               learn_pairs: bool, vector: bytes | None = None, vector_model: str | None = None) -> int:
    """Record a search (results: note ids, and "knowledge:<item_id>" for items); with learn_pairs, raise
    the weight of every unordered pair of notes among its results. vector: the query's (the owner's
    searches keep it for usage memory) and the model that made it.

    Written to `main.` tables by name: an agent connection reads filtered views of them.
    """
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    with conn:
        conn.execute("INSERT INTO main.search_log (searched_at, query, mode, results, audience, query_vector,"
                     " vector_model) VALUES (?, ?, ?, ?, ?, ?, ?)",
                     (now, query, mode, json.dumps(note_ids), audience, vector, vector_model))
        search_id = conn.last_insert_rowid()
        if learn_pairs:
            notes = {n for n in note_ids if not n.startswith("knowledge:")}  # items teach no note pairs
            pairs = {tuple(sorted(pair)) for pair in itertools.combinations(notes, 2)}
            conn.executemany(
                "INSERT INTO main.search_pairs (note_a, note_b, weight, last_seen) VALUES (?, ?, 1, ?)"
                " ON CONFLICT(note_a, note_b) DO UPDATE SET weight = weight + 1, last_seen = excluded.last_seen",
                [(a, b, now) for a, b in sorted(pairs)],
            )
    return search_id


def prune_search_log(conn: apsw.Connection, before: str) -> int:
    """Forget logged searches older than `before` (ISO time); the pairs they taught stay."""
    with conn:
        conn.execute("DELETE FROM main.search_log WHERE searched_at < ?", (before,))
        pruned = conn.changes()
        lower_search_watermark(conn)
        return pruned


def lower_search_watermark(conn: apsw.Connection) -> None:
    """After searches were deleted: search ids are row ids, so the next one takes the highest
    left + 1 (1 in an empty log). A watermark of searches already read above that would skip the
    searches logged from now on; it comes down to the highest id left."""
    highest = conn.execute("SELECT coalesce(max(search_id), 0) FROM main.search_log").fetchone()[0]
    conn.execute("UPDATE main.meta SET value = ? WHERE key = ? AND CAST(value AS INTEGER) > ?",
                 (str(highest), SEARCH_WATERMARK_KEY, highest))


def expansion_edges(conn: apsw.Connection, note_ids: list[str]) -> list[tuple[str, str, str, float]]:
    """Note-level explicit, rule and signal (change graph) edges touching these notes,
    as (from, to, provenance, confidence).

    Both directions: a link from A to B lets A pull B up and B pull A up. Only edges between
    indexed notes count (the vaultmap rule); structure and chunk edges never do.
    """
    if not note_ids:
        return []
    marks = ",".join("?" * len(note_ids))
    rows = conn.execute(
        "SELECT e.source_id, e.target_id, e.provenance, e.confidence FROM edges e"
        " JOIN notes s ON s.note_id = e.source_id JOIN notes t ON t.note_id = e.target_id"
        f" WHERE e.scope = 'note' AND e.provenance IN ('explicit', 'rule', 'signal') AND e.source_id != e.target_id"
        f" AND (e.source_id IN ({marks}) OR e.target_id IN ({marks}))",
        (*note_ids, *note_ids))
    out = []
    wanted = set(note_ids)
    for source, target, provenance, confidence in rows:
        if source in wanted:
            out.append((source, target, provenance, confidence))
        if target in wanted:
            out.append((target, source, provenance, confidence))
    return out


def notes_passing(conn: apsw.Connection, note_ids: list[str], note_type: str | None = None,
                  tag: str | None = None, path_prefix: str | None = None) -> set[str]:
    """Which of these notes pass the search filters (in batches: expansion can reach thousands)."""
    where, args = _filters(note_type, tag, path_prefix)
    passing: set[str] = set()
    for start in range(0, len(note_ids), 500):
        batch = note_ids[start:start + 500]
        marks = ",".join("?" * len(batch))
        passing.update(row[0] for row in conn.execute(
            f"SELECT n.note_id FROM notes n WHERE n.note_id IN ({marks}){where}", (*batch, *args)))
    return passing


def fts_note_count(conn: apsw.Connection, expression: str, note_type: str | None = None, tag: str | None = None,
                   path_prefix: str | None = None, anchors: bool = True, at_most: int | None = None) -> int:
    """How many notes the full-text expression matches (by a chunk, or by anchor text when
    `anchors`), through the connection's `chunks` and `notes`: what a list of results can reach.
    `at_most`: stop counting past it (the answer is then at_most + 1): counting every note of a
    word in most of a million chunks took 10.8 s, the first 10,001 of them 0.4 s."""
    where, args = _filters(note_type, tag, path_prefix)
    by_chunk = ("SELECT DISTINCT c.note_id FROM chunks_fts JOIN chunks c ON c.chunk_id = chunks_fts.rowid"
                f" JOIN notes n ON n.note_id = c.note_id WHERE chunks_fts MATCH ?{where}")
    anchor_notes = ("SELECT a.note_id FROM chunks_fts JOIN note_anchors a ON a.anchor_id = -chunks_fts.rowid"
                    f" JOIN notes n ON n.note_id = a.note_id WHERE chunks_fts MATCH ? AND chunks_fts.rowid < 0{where}")
    if at_most is not None:
        # The chunks' notes, read until past the cap (DISTINCT with a LIMIT stops early; a UNION
        # would make every row first); below it they are the count, with the anchor rows' notes
        # (a few) added: the matching rows are read once, not once more to count them.
        notes = {row[0] for row in conn.execute(f"{by_chunk} LIMIT ?", (expression, *args, at_most + 1))}
        if anchors and len(notes) <= at_most:
            notes.update(row[0] for row in conn.execute(anchor_notes, (expression, *args)))
        return min(len(notes), at_most + 1)
    by_anchor = f" UNION {anchor_notes}" if anchors else ""
    sql = f"SELECT count(DISTINCT note_id) FROM ({by_chunk}{by_anchor})"
    params = (expression, *args, *((expression, *args) if anchors else ()))
    return conn.execute(sql, params).fetchone()[0]
