"""Query functions for embeddings and the vec0 table."""

from __future__ import annotations

import datetime
import json
import time
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import apsw

from mindtui.lazy_import import lazy_module
from mindtui.store import ann, vector_codes
from mindtui.store.visibility import model_readable

np = lazy_module("numpy")  # a full-text search never imports it (see lazy_import)

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


# Where the sweep's walk through the notes stands: the (mtime_ns, note_id) of the last note of
# the previous page. None: start at the most recently edited note.
PageCursor = tuple[int, str] | None


def pending_chunk_page(conn: apsw.Connection, model_id: str, limit: int,
                       after: PageCursor = None) -> tuple[list[PendingText], PageCursor]:
    """About `limit` distinct chunk texts with no vector for `model_id`, the most recently edited
    note's first (notes with ai_processing off excluded), from `after` on; returns them and the
    cursor for the next page. The walk follows the notes_mtime index, so a page costs what it
    reads, however large the vault; the note a page ends in is read again by the next page
    (its texts embedded meanwhile drop out by NOT EXISTS). A text shared by several notes comes
    with the newest of them, once per page; `chunks` counts every chunk using it."""
    bound, args = "", [model_id]
    if after is not None:
        bound = " AND (n.mtime_ns, n.note_id) <= (?, ?)"  # a row value: a range of the index
        args += [after[0], after[1]]
    rows = conn.execute(
        "SELECT c.content_hash, n.title, c.heading_path, c.text, n.mtime_ns, n.note_id,"
        " (SELECT count(*) FROM chunks d WHERE d.content_hash = c.content_hash)"
        " FROM notes n INDEXED BY notes_mtime CROSS JOIN chunks c ON c.note_id = n.note_id"
        f" WHERE {model_readable('n')} AND NOT EXISTS ("
        "   SELECT 1 FROM embeddings e WHERE e.model_id = ? AND e.content_hash = c.content_hash)"
        f"{bound} ORDER BY n.mtime_ns DESC, n.note_id DESC, c.seq LIMIT ?",
        (*args, limit),
    ).fetchall()
    texts: dict[str, PendingText] = {}
    for content_hash, title, heading_path, text, _mtime, _note, chunks in rows:
        texts.setdefault(content_hash, PendingText(content_hash, title, heading_path, text, chunks))
    # A short page reached the oldest note: the walk has ended (cursor None). A page never
    # repeats its texts as long as the caller embeds them before asking for the next one.
    return list(texts.values()), (rows[-1][4], rows[-1][5]) if len(rows) == limit else None


def pending_chunk_pages(conn: apsw.Connection, model_id: str, page_size: int) -> Iterator[list[PendingText]]:
    """Every pending chunk text, page by page (pending_chunk_page): one walk from the most
    recently edited note to the oldest, then another while the last one found something (texts
    of notes edited meanwhile, which sort before the walk's cursor). The caller embeds each
    page before it asks for the next."""
    while True:
        cursor, found = None, False
        while True:
            page, cursor = pending_chunk_page(conn, model_id, page_size, cursor)
            if page:
                found = True
                yield page
            if cursor is None:
                break
        if not found:
            return


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


def notes_without_vectors(conn: apsw.Connection, note_ids: Sequence[str], model_id: str) -> dict[str, bool]:
    """note id -> whether it may be embedded, for the notes of `note_ids` none of whose chunks has a
    vector of the model (not embedded yet; or never: ai_processing none, or no chunk)."""
    rows = conn.execute(
        f"SELECT n.note_id, {model_readable('n')} FROM notes n WHERE n.note_id IN (SELECT value FROM json_each(?))"
        " AND NOT EXISTS (SELECT 1 FROM chunks c JOIN embeddings e ON e.content_hash = c.content_hash"
        " AND e.model_id = ? WHERE c.note_id = n.note_id)", (json.dumps(sorted(note_ids)), model_id))
    return {note_id: bool(readable) for note_id, readable in rows}


def insert_vectors(conn: apsw.Connection, model_id: str, hashes: Sequence[str], vectors: np.ndarray) -> None:
    """Store one batch, and its codes when the code index is built; the caller wraps it in a
    transaction (a kill leaves both or neither)."""
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    ids = []
    for content_hash, vector in zip(hashes, vectors):
        conn.execute(
            "INSERT INTO embeddings (model_id, content_hash, dim, created_at) VALUES (?, ?, ?, ?)",
            (model_id, content_hash, int(vector.shape[0]), now),
        )
        ids.append(conn.last_insert_rowid())
        conn.execute(
            "INSERT INTO vec_chunks (rowid, embedding) VALUES (?, ?)",
            (ids[-1], np.asarray(vector, dtype=np.float32).tobytes()),
        )
    if ids:
        vector_codes.add(conn, ids, np.asarray(vectors, dtype=np.float32)[: len(ids)])


def models_with_vectors(conn: apsw.Connection) -> dict[str, int]:
    return dict(conn.execute("SELECT model_id, count(*) FROM embeddings GROUP BY model_id").fetchall())


def _delete_embeddings(conn: apsw.Connection, where: str, args: Sequence) -> int:
    """Delete embeddings (their vec_chunks rows go by trigger) and their codes, in one savepoint."""
    with conn:
        ids = [row[0] for row in conn.execute(f"SELECT embedding_id FROM embeddings WHERE {where}", args)]
        if not ids:
            return 0
        conn.execute(f"DELETE FROM embeddings WHERE {where}", args)
        vector_codes.remove(conn, ids)
        return len(ids)


def delete_other_models(conn: apsw.Connection, model_id: str) -> int:
    params = vector_codes.load_params(conn)
    if params is not None and params.model_id != model_id:
        vector_codes.drop(conn)  # fitted to another model's vectors: the next nightly builds it again
    return _delete_embeddings(conn, "model_id != ?", (model_id,))


def delete_orphans(conn: apsw.Connection, model_id: str) -> int:
    """Vectors whose text no longer belongs to any chunk or current knowledge item that may be embedded."""
    return _delete_embeddings(
        conn, "model_id = ? AND content_hash NOT IN ("
        f" SELECT c.content_hash FROM chunks c JOIN notes n ON n.note_id = c.note_id WHERE {model_readable('n')})"
        f" AND content_hash NOT IN (SELECT i.content_hash FROM ({_EMBEDDABLE_ITEMS}) i)", (model_id,))


@dataclass(frozen=True)
class VectorHit:
    embedding_id: int
    distance: float  # cosine distance: 1 - cosine similarity


MAX_K = 4096  # sqlite-vec's limit on `k`


def use_code_index(conn: apsw.Connection, search_settings) -> None:
    """This connection's searches use the code index from search.ann_min_vectors vectors on,
    rescoring search.ann_rescore candidates of the search.ann_prefilter the int4 scan passes on
    (the note vectors: ann_note_rescore, ann_note_prefilter; config/mindtui.yaml); an
    unconfigured connection always scans exactly."""
    configure_code_index(conn, search_settings, search_settings.ann_min_vectors)


def configure_code_index(conn: apsw.Connection, search_settings, min_vectors: int) -> None:
    ann.configure(conn, min_vectors, search_settings.ann_rescore, search_settings.ann_prefilter,
                  search_settings.ann_note_rescore, search_settings.ann_note_prefilter)


CHUNKS, NOTES = vector_codes.CHUNKS, vector_codes.NOTES


@dataclass(frozen=True, eq=False)
class CandidateScan:
    """The code index's candidate scan of one KNN (`knn(conn, query, k, space)`), prepared on the
    connection's thread. Calling it reads only the codes in memory, never the connection: a
    search runs it in another thread while its full-text query runs (numkong and apsw let go of
    the GIL), then hands the ids to `knn`, which rescores them on the connection."""
    index: object  # the ann snapshot the ids come from
    pool: int
    prefilter: int
    space: vector_codes.VectorSpace

    def __call__(self, query: np.ndarray) -> ScannedCandidates:
        return ScannedCandidates(self, ann.candidates(self.index, query, self.pool, self.prefilter))

    def reads_as(self, other: CandidateScan) -> bool:
        """The same codes (one snapshot: a refresh makes a new one), pool, prefilter and space."""
        return (self.index is other.index and self.pool == other.pool and self.prefilter == other.prefilter
                and self.space == other.space)


@dataclass(frozen=True, eq=False)
class ScannedCandidates:
    scan: CandidateScan
    ids: np.ndarray


def rescore_pool(chosen: ann.AnnSettings, k: int) -> int:
    """How many candidates a KNN of `k` over the code index ranks again by float vectors:
    search.ann_rescore, or a quarter more than k (the int8 codes' top 64 held 0.998 of the exact
    top 50 at 100k and 1M vectors, bench/ann_bench.py)."""
    return max(chosen.rescore, int(k) + int(k) // 4)


def candidate_scan(conn: apsw.Connection, k: int, space: vector_codes.VectorSpace = CHUNKS) -> CandidateScan | None:
    """The scan `knn(conn, query, k, space)` would run, or None when it would not use the code index."""
    index = ann.index_for(conn, space)
    if index is None:
        return None
    chosen = ann.settings_of(conn).of(space)
    return CandidateScan(index, rescore_pool(chosen, k), chosen.prefilter, space)


def knn(conn: apsw.Connection, query: np.ndarray, k: int, space: vector_codes.VectorSpace = CHUNKS,
        scanned: ScannedCandidates | None = None) -> list[VectorHit]:
    """The `k` nearest vectors of `space` (chunks' or notes'; a hit's embedding_id is the space's
    rowid): over the code index above search.ann_min_vectors (see ann.py), else the exact
    sqlite-vec scan. `scanned`: this query's candidates, scanned ahead (candidate_scan); used
    when they come from the index and pool this KNN reads now, else scanned again."""
    scan = candidate_scan(conn, k, space)
    if scan is not None:
        ids = scanned.ids if scanned is not None and scanned.scan.reads_as(scan) else scan(query).ids
        return [VectorHit(i, d) for i, d in ann.rescored(conn, ids, query, int(k), space)]
    return exact_knn(conn, query, k, space)


def exact_knn(conn: apsw.Connection, query: np.ndarray, k: int, space: vector_codes.VectorSpace = CHUNKS
              ) -> list[VectorHit]:
    rows = conn.execute(
        f"SELECT rowid, distance FROM {space.vectors} WHERE embedding MATCH ? AND k = ? ORDER BY distance",
        (np.asarray(query, dtype=np.float32).tobytes(), min(int(k), MAX_K)),
    )
    return [VectorHit(rowid, distance) for rowid, distance in rows]


def knn_within(conn: apsw.Connection, query: np.ndarray, k: int, allowed: tuple[str, Sequence] | None = None,
               space: vector_codes.VectorSpace = CHUNKS) -> list[VectorHit]:
    """The KNN over only the vectors whose rowids `allowed` (SQL of a subquery selecting a column
    embedding_id, its arguments) returns; by default those of chunks the connection sees (an
    agent's hides its notes) that a model may read.

    Over the code index: the best candidates, of which only those the subquery admits count
    (the subquery checks just them), twice as many each round until the admitted fill the pool
    an unfiltered search rescores; a filter narrower than that after ANN_WIDENINGS doublings (few
    vectors pass it) has its ids read whole and only their codes scanned. (sqlite-vec's exact
    `rowid IN` scan is no way out at that size: 1.2-5 s for 5,000 admitted ids of a million,
    slower than its full scan.)"""
    allowed = allowed or (READABLE_CHUNK_VECTORS, ())
    index = ann.index_for(conn, space)
    if index is not None:
        chosen = ann.settings_of(conn).of(space)
        pool = rescore_pool(chosen, k)
        count = pool
        for _ in range(ANN_WIDENINGS + 1):
            found = ann.candidates(index, query, count, chosen.prefilter)
            passing = vector_codes.admitted(conn, found, allowed)
            kept = np.array([i for i in found if int(i) in passing], dtype=np.int64)
            if len(kept) >= pool or len(found) < count:  # the pool is full, or every vector was looked at
                return [VectorHit(i, d) for i, d in ann.rescored(conn, kept[:pool], query, int(k), space)]
            count *= 2
        few = np.array(sorted(vector_codes.admitted_all(conn, allowed)), dtype=np.int64)
        return [VectorHit(i, d) for i, d in ann.rescored(conn, ann.candidates_among(index, query, few, pool),
                                                         query, int(k), space)]
    return exact_knn_within(conn, query, k, allowed, space)


ANN_WIDENINGS = 4  # a filter admitting less than 1/16 of the vectors near the query: its own ids' codes


def exact_knn_within(conn: apsw.Connection, query: np.ndarray, k: int, allowed: tuple[str, Sequence],
                     space: vector_codes.VectorSpace = CHUNKS) -> list[VectorHit]:
    sql, args = allowed
    rows = conn.execute(
        f"SELECT rowid, distance FROM {space.vectors} WHERE embedding MATCH ? AND k = ? AND rowid IN ({sql})"
        " ORDER BY distance", (np.asarray(query, dtype=np.float32).tobytes(), min(int(k), MAX_K), *args))
    return [VectorHit(rowid, distance) for rowid, distance in rows]


READABLE_CHUNK_VECTORS = (
    "SELECT e.embedding_id FROM embeddings e JOIN chunks c ON c.content_hash = e.content_hash"
    f" JOIN notes n ON n.note_id = c.note_id WHERE {model_readable('n')}")


def knn_refilled(conn: apsw.Connection, query: np.ndarray, k: int, enough: Callable[[list[VectorHit]], bool],
                 allowed: tuple[str, Sequence] | None = None, space: vector_codes.VectorSpace = CHUNKS,
                 scanned: ScannedCandidates | None = None) -> list[VectorHit]:
    """The nearest vectors until `enough(hits)` says the caller has what it needs or the index
    has no more. The plain KNN sees every vector: chunks of notes the reader may not see,
    knowledge items, a filter's misses can crowd its first `k`. Then the KNN runs again over only
    the vectors that count (`allowed`, see knn_within), asking for twice as many each time it
    is not enough, up to sqlite-vec's limit on k. `scanned`: the first KNN's candidates (see knn)."""
    k = max(1, int(k))
    hits = knn(conn, query, k, space, scanned)
    if enough(hits) or len(hits) < min(k, MAX_K):
        return hits
    while True:
        hits = knn_within(conn, query, k, allowed, space)
        if enough(hits) or len(hits) < min(k, MAX_K) or k >= MAX_K:
            return hits
        k *= 2


RECALL_AT = 50


def code_index_upkeep(conn: apsw.Connection, search_settings, model_id: str | None, refit: bool = False) -> dict:
    """The nightly's care of the code indexes, the chunks' and (key "notes") the note vectors':
    each built once its vectors reach search.ann_min_vectors (or on request: `refit`), its
    recall@50 against the exact scan sampled (search.ann_recall_sample queries: the owner's for
    chunks, note vectors for notes), fitted again when that falls below search.ann_recall_floor.
    Between builds every insert and delete keeps them current (insert_vectors, _delete_embeddings,
    note_vectors.refresh_note_vectors)."""
    if not model_id:
        return {"vector_index": "no vectors"}
    report = _space_upkeep(conn, search_settings, model_id, refit, CHUNKS)
    report["notes"] = _space_upkeep(conn, search_settings, model_id, refit, NOTES)
    return report


def _space_upkeep(conn: apsw.Connection, search_settings, model_id: str, refit: bool,
                  space: vector_codes.VectorSpace) -> dict:
    params = vector_codes.load_params(conn, space)
    count = vector_codes.vector_count(conn, model_id, space)
    report: dict = {"vectors": count}
    if refit or (params is None and count >= search_settings.ann_min_vectors) or (
            params is not None and params.model_id != model_id):
        started = time.monotonic()
        params = vector_codes.build(conn, model_id, space)
        report["built_s"] = round(time.monotonic() - started, 2)
    if params is None:
        report["vector_index"] = "exact scan (fewer vectors than search.ann_min_vectors)"
        return report
    report["vector_index"] = "codes"
    measured = _sampled_recall(conn, search_settings, model_id, space)
    if measured is not None and measured[0] < search_settings.ann_recall_floor and "built_s" not in report:
        report["refit_for_recall"] = measured[0]
        vector_codes.build(conn, model_id, space)
        measured = _sampled_recall(conn, search_settings, model_id, space)
    if measured is not None:
        report["recall_at_50"] = round(measured[0], 4)
    return report


def _sampled_recall(conn: apsw.Connection, search_settings, model_id: str, space: vector_codes.VectorSpace
                    ) -> tuple[float, int] | None:
    source, queries = vector_codes.sample_queries(conn, model_id, search_settings.ann_recall_sample, space)
    if not queries:
        return None
    chosen = ann.settings_of(conn)
    # The index whatever its size, searched as the searches do: its recall is asked.
    configure_code_index(conn, search_settings, 1)
    try:
        shares = []
        for query in queries:
            exact = {h.embedding_id for h in exact_knn(conn, query, RECALL_AT, space)}
            shares.append(len(exact & {h.embedding_id for h in knn(conn, query, RECALL_AT, space)}) / max(1, len(exact)))
    finally:
        if chosen is None:
            ann.forget(conn)
        else:
            ann.reuse(conn, chosen)
    recall = float(np.mean(shares))
    vector_codes.save_recall(conn, recall, len(queries), source, space)
    return recall, len(queries)


def code_index_status(conn: apsw.Connection) -> dict:
    """For the owner's status: how many vectors are coded, the fit, the sampled recall (the
    chunks' index; the note vectors' under "notes")."""
    status = _space_status(conn, CHUNKS)
    status["notes"] = _space_status(conn, NOTES)
    return status


def _space_status(conn: apsw.Connection, space: vector_codes.VectorSpace) -> dict:
    params = vector_codes.load_params(conn, space)
    if params is None:
        return {"built": False}
    return {"built": True, "model": params.model_id, "fitted_at": params.fitted_at,
            "vectors_coded": vector_codes.coded_count(conn, space), "recall": vector_codes.load_recall(conn, space)}
