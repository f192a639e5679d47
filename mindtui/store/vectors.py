"""Query functions for embeddings and the vec0 table."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Callable, Sequence

import apsw
import numpy as np

from mindtui.store.visibility import model_readable

VECTOR_DIM = 384  # fixed by migration 0002's vec0 column


@dataclass(frozen=True)
class PendingText:
    content_hash: str
    title: str
    heading_path: str
    text: str
    chunks: int  # how many chunks share this text (embedded once)


# Current knowledge items a model may read (not stated in an `ai_processing: none` note): embedded
# like a chunk titled with the item's title whose text is its body (see knowledge_store.item_passage).
_EMBEDDABLE_ITEMS = (
    "SELECT k.content_hash, k.title, k.body, k.item_id FROM knowledge_items k WHERE k.is_current = 1"
    " AND (k.source_note_id IS NULL OR NOT EXISTS (SELECT 1 FROM notes n WHERE n.note_id = k.source_note_id"
    f" AND NOT ({model_readable('n')})))")


def pending_items(conn: apsw.Connection, model_id: str) -> list[PendingText]:
    """The texts of current knowledge items with no vector for `model_id` (few: read whole)."""
    return [PendingText(content_hash, title, "", body, 1) for content_hash, title, body, _item_id in conn.execute(
        f"SELECT i.* FROM ({_EMBEDDABLE_ITEMS}) i WHERE NOT EXISTS ("
        " SELECT 1 FROM embeddings e WHERE e.model_id = ? AND e.content_hash = i.content_hash)"
        " GROUP BY i.content_hash ORDER BY min(i.item_id)", (model_id,))]


def pending_chunk_page(conn: apsw.Connection, model_id: str, limit: int) -> list[PendingText]:
    """The next `limit` distinct chunk texts with no vector for `model_id`, the most recently edited
    note's first (notes with ai_processing off excluded). Each call reads what is still pending, so
    the sweep holds one page in memory however large the vault, and a killed sweep resumes in the
    same order."""
    rows = conn.execute(
        "SELECT c.content_hash, n.title, c.heading_path, c.text, count(*) FROM chunks c"
        " JOIN notes n ON n.note_id = c.note_id"
        f" WHERE {model_readable('n')} AND NOT EXISTS ("
        "   SELECT 1 FROM embeddings e WHERE e.model_id = ? AND e.content_hash = c.content_hash)"
        " GROUP BY c.content_hash ORDER BY max(n.mtime_ns) DESC, min(c.chunk_id) LIMIT ?",
        (model_id, limit),
    )
    return [PendingText(*row) for row in rows]


def pending_count(conn: apsw.Connection, model_id: str) -> int:
    """How many distinct texts (chunk texts and knowledge items) still lack a vector."""
    chunk_texts = conn.execute(
        "SELECT count(DISTINCT c.content_hash) FROM chunks c JOIN notes n ON n.note_id = c.note_id"
        f" WHERE {model_readable('n')} AND NOT EXISTS ("
        "   SELECT 1 FROM embeddings e WHERE e.model_id = ? AND e.content_hash = c.content_hash)",
        (model_id,)).fetchone()[0]
    return chunk_texts + len(pending_items(conn, model_id))


def chunk_coverage(conn: apsw.Connection, model_id: str) -> dict[str, int]:
    row = conn.execute(
        "SELECT count(*),"
        f" count(*) FILTER (WHERE NOT ({model_readable('n')})),"
        " count(*) FILTER (WHERE EXISTS (SELECT 1 FROM embeddings e"
        "                  WHERE e.model_id = ? AND e.content_hash = c.content_hash))"
        " FROM chunks c JOIN notes n ON n.note_id = c.note_id",
        (model_id,),
    ).fetchone()
    return {"chunks": row[0], "chunks_ai_excluded": row[1], "chunks_with_vector": row[2]}


def insert_vectors(conn: apsw.Connection, model_id: str, hashes: Sequence[str], vectors: np.ndarray) -> None:
    """Store one batch; the caller wraps it in a transaction."""
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    for content_hash, vector in zip(hashes, vectors):
        conn.execute(
            "INSERT INTO embeddings (model_id, content_hash, dim, created_at) VALUES (?, ?, ?, ?)",
            (model_id, content_hash, int(vector.shape[0]), now),
        )
        conn.execute(
            "INSERT INTO vec_chunks (rowid, embedding) VALUES (?, ?)",
            (conn.last_insert_rowid(), np.asarray(vector, dtype=np.float32).tobytes()),
        )


def models_with_vectors(conn: apsw.Connection) -> dict[str, int]:
    return dict(conn.execute("SELECT model_id, count(*) FROM embeddings GROUP BY model_id").fetchall())


def delete_other_models(conn: apsw.Connection, model_id: str) -> int:
    conn.execute("DELETE FROM embeddings WHERE model_id != ?", (model_id,))
    return conn.changes()


def delete_orphans(conn: apsw.Connection, model_id: str) -> int:
    """Vectors whose text no longer belongs to any chunk or current knowledge item that may be embedded."""
    conn.execute(
        "DELETE FROM embeddings WHERE model_id = ? AND content_hash NOT IN ("
        f" SELECT c.content_hash FROM chunks c JOIN notes n ON n.note_id = c.note_id WHERE {model_readable('n')})"
        f" AND content_hash NOT IN (SELECT i.content_hash FROM ({_EMBEDDABLE_ITEMS}) i)",
        (model_id,),
    )
    return conn.changes()


@dataclass(frozen=True)
class VectorHit:
    embedding_id: int
    distance: float  # cosine distance: 1 - cosine similarity


MAX_K = 4096  # sqlite-vec's limit on `k`


def knn(conn: apsw.Connection, query: np.ndarray, k: int) -> list[VectorHit]:
    rows = conn.execute(
        "SELECT rowid, distance FROM vec_chunks WHERE embedding MATCH ? AND k = ? ORDER BY distance",
        (np.asarray(query, dtype=np.float32).tobytes(), min(int(k), MAX_K)),
    )
    return [VectorHit(rowid, distance) for rowid, distance in rows]


def knn_within(conn: apsw.Connection, query: np.ndarray, k: int, allowed: tuple[str, Sequence] | None = None
               ) -> list[VectorHit]:
    """The KNN over only the vectors whose rowids `allowed` (SQL of a subquery, its arguments)
    returns; by default those of chunks the connection sees (an agent's hides its notes) that a
    model may read."""
    sql, args = allowed or (READABLE_CHUNK_VECTORS, ())
    rows = conn.execute(
        f"SELECT rowid, distance FROM vec_chunks WHERE embedding MATCH ? AND k = ? AND rowid IN ({sql})"
        " ORDER BY distance", (np.asarray(query, dtype=np.float32).tobytes(), min(int(k), MAX_K), *args))
    return [VectorHit(rowid, distance) for rowid, distance in rows]


READABLE_CHUNK_VECTORS = (
    "SELECT e.embedding_id FROM embeddings e JOIN chunks c ON c.content_hash = e.content_hash"
    f" JOIN notes n ON n.note_id = c.note_id WHERE {model_readable('n')}")


def knn_refilled(conn: apsw.Connection, query: np.ndarray, k: int, enough: Callable[[list[VectorHit]], bool],
                 allowed: tuple[str, Sequence] | None = None) -> list[VectorHit]:
    """The nearest vectors until `enough(hits)` says the caller has what it needs or the index
    has no more. The plain KNN sees every vector: chunks of notes the reader may not see,
    knowledge items, a filter's misses can crowd its first `k`. Then the KNN runs again over only
    the vectors that count (`allowed`, see knn_within), asking for twice as many each time it
    is not enough, up to sqlite-vec's limit on k."""
    k = max(1, int(k))
    hits = knn(conn, query, k)
    if enough(hits) or len(hits) < min(k, MAX_K):
        return hits
    while True:
        hits = knn_within(conn, query, k, allowed)
        if enough(hits) or len(hits) < min(k, MAX_K) or k >= MAX_K:
            return hits
        k *= 2
