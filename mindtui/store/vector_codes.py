"""The vector code index's pages (migrations 0013 and 0015): int8 codes of every vector of a vector
space (the chunks' vec_chunks, the notes' vec_notes: `VectorSpace`), kept in the same transaction
as the vectors themselves.

A code is the vector less the corpus mean, divided per dimension by 4 standard deviations / 127,
rounded and clipped to [-127, 127]. e5 vectors share a large common component: without the mean
taken out, the codes would spend their range on what every vector has, and the ranking of the
differences, the part a query tells apart, would drown (the centred codes' top few hundred hold
the exact top 50 of real queries; README "Vector search at scale"). The mean and the scales are
fitted once, when the index is built (`build`), and kept in meta: a vector added later is coded
with them, and only a new model, an explicit request or a sampled recall below
search.ann_recall_floor fits them again (the nightly, jobs.runner).

Pages hold the codes of 4,096 consecutive embedding ids (ids blob + codes blob): a batch of new
vectors rewrites the one or two pages it falls in, and a process's in-memory copy (ann.py) reads
again only pages whose stamp moved.
"""

from __future__ import annotations

import datetime
import json
import secrets
import uuid
from dataclasses import dataclass
from typing import Iterable, Sequence

import apsw

from mindtui.lazy_import import lazy_module
from mindtui.store.batch import immediate
from mindtui.store.meta import get_meta, set_meta

np = lazy_module("numpy")  # a full-text search never imports it (see lazy_import)

PAGE_BITS = 12  # 4,096 embedding ids a page
_SPREAD = 4.0  # a dimension's codes cover +-4 standard deviations (a rarer value is clipped)


@dataclass(frozen=True)
class VectorSpace:
    """One vec0 table and its code index: where the codes, the float16 copies and the meta rows are."""
    name: str
    vectors: str  # the vec0 table (its rowid is the id coded)
    pages: str  # the code pages (page_id, stamp, ids, codes)
    halves: str  # the float16 copies
    halves_id: str  # their id column
    params_key: str  # meta, JSON: model, mean, scale, fitted_at, fit_id, vectors
    stamp_key: str  # meta: moves with every page written: a cached copy compares it
    recall_key: str  # meta, JSON: the nightly's sampled recall@50 against the exact scan


CHUNKS = VectorSpace("chunks", "vec_chunks", "vector_code_pages", "vector_halves", "embedding_id",
                     "vector_codes", "vector_codes_stamp", "vector_codes_recall")
NOTES = VectorSpace("notes", "vec_notes", "note_code_pages", "note_vector_halves", "note_vector_id",
                    "note_codes", "note_codes_stamp", "note_codes_recall")


@dataclass(frozen=True)
class CodeParams:
    model_id: str
    mean: np.ndarray  # float32, per dimension
    scale: np.ndarray  # float32, per dimension: a code step
    fitted_at: str
    fit_id: str  # new at every build: a cached copy of another fit is dropped whole
    vectors: int  # how many vectors the fit saw

    def encode(self, vectors: np.ndarray) -> np.ndarray:
        codes = np.rint((np.asarray(vectors, dtype=np.float32) - self.mean) / self.scale)
        return np.clip(codes, -127, 127).astype(np.int8)


def load_params(conn: apsw.Connection, space: VectorSpace = CHUNKS) -> CodeParams | None:
    raw = get_meta(conn, space.params_key)
    if raw is None:
        return None
    data = json.loads(raw)
    return CodeParams(data["model"], np.asarray(data["mean"], dtype=np.float32),
                      np.asarray(data["scale"], dtype=np.float32), data["fitted_at"], data["fit_id"], data["vectors"])


def stamp(conn: apsw.Connection, space: VectorSpace = CHUNKS) -> int:
    return int(get_meta(conn, space.stamp_key) or 0)


def _next_stamp(conn: apsw.Connection, space: VectorSpace = CHUNKS) -> int:
    # The first stamp of a file is random: a process's copy of another file once at this path
    # (deleted, made again) must not pass for current because both counted from 1.
    current = get_meta(conn, space.stamp_key)
    value = int(current) + 1 if current is not None else secrets.randbelow(2**40) + 1
    set_meta(conn, space.stamp_key, str(value))
    return value


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _all_vectors(conn: apsw.Connection, space: VectorSpace, batch: int = 8192) -> Iterable[tuple[np.ndarray, np.ndarray]]:
    """Every stored vector, a batch (ids, float32 matrix) at a time, in the table's own order: one
    scan (vec0 answers `rowid > ?` by scanning everything, so paging by rowid would scan N/batch
    times)."""
    rows = []
    for row in conn.execute(f"SELECT rowid, embedding FROM {space.vectors}"):
        rows.append(row)
        if len(rows) == batch:
            yield _batch(rows)
            rows = []
    if rows:
        yield _batch(rows)


def _batch(rows: list) -> tuple[np.ndarray, np.ndarray]:
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    return ids, np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)


def _write_page(conn: apsw.Connection, space: VectorSpace, page_id: int, ids: np.ndarray, codes: np.ndarray,
                page_stamp: int) -> None:
    if len(ids) == 0:
        conn.execute(f"DELETE FROM {space.pages} WHERE page_id = ?", (page_id,))
        return
    conn.execute(f"INSERT INTO {space.pages} (page_id, stamp, ids, codes) VALUES (?, ?, ?, ?)"
                 " ON CONFLICT(page_id) DO UPDATE SET stamp = excluded.stamp, ids = excluded.ids,"
                 " codes = excluded.codes",
                 (page_id, page_stamp, np.ascontiguousarray(ids, dtype=np.int64).tobytes(),
                  np.ascontiguousarray(codes, dtype=np.int8).tobytes()))


def build(conn: apsw.Connection, model_id: str, space: VectorSpace = CHUNKS) -> CodeParams | None:
    """Fit the mean and scales on every stored vector and write every page, in one transaction
    (a kill leaves the previous index or none). Two passes over the vectors, a batch in memory at
    a time (a million vectors are 1.5 GB as floats). None when there are no vectors."""
    with immediate(conn):  # it reads every vector before it writes
        total, sums, squares = 0, None, None
        for _ids, block in _all_vectors(conn, space):
            wide = block.astype(np.float64)
            sums = wide.sum(axis=0) if sums is None else sums + wide.sum(axis=0)
            squares = (wide * wide).sum(axis=0) if squares is None else squares + (wide * wide).sum(axis=0)
            total += len(block)
        conn.execute(f"DELETE FROM {space.pages}")
        if not total:
            drop(conn, space)
            return None
        mean = sums / total
        std = np.sqrt(np.maximum(squares / total - mean * mean, 0.0))
        scale = np.maximum(std * _SPREAD / 127, 1e-6)  # a constant dimension must not divide by zero
        params = CodeParams(model_id, mean.astype(np.float32), scale.astype(np.float32), _now(),
                            uuid.uuid4().hex, total)
        set_meta(conn, space.params_key, json.dumps({
            "model": model_id, "mean": params.mean.tolist(), "scale": params.scale.tolist(),
            "fitted_at": params.fitted_at, "fit_id": params.fit_id, "vectors": total}))
        page_stamp = _next_stamp(conn, space)
        conn.execute(f"DELETE FROM {space.halves}")
        parts: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}  # the codes, a quarter of the floats' bytes
        for ids, block in _all_vectors(conn, space):
            _write_halves(conn, space, ids, block)
            pages = ids >> PAGE_BITS
            codes = params.encode(block)
            for page in np.unique(pages):
                mask = pages == page
                parts.setdefault(int(page), []).append((ids[mask], codes[mask]))
        for page, pieces in sorted(parts.items()):
            ids = np.concatenate([p[0] for p in pieces])
            order = np.argsort(ids, kind="stable")
            _write_page(conn, space, page, ids[order], np.concatenate([p[1] for p in pieces])[order], page_stamp)
    return params


def _write_halves(conn: apsw.Connection, space: VectorSpace, ids: np.ndarray, vectors: np.ndarray) -> None:
    halves = np.asarray(vectors, dtype=np.float16)
    conn.executemany(f"INSERT OR REPLACE INTO {space.halves} ({space.halves_id}, half) VALUES (?, ?)",
                     ((int(i), h.tobytes()) for i, h in zip(ids, halves)))


def drop(conn: apsw.Connection, space: VectorSpace = CHUNKS) -> None:
    """No index (the model changed, or a rebuild starts over): the exact scan serves until the next build."""
    with conn:
        conn.execute(f"DELETE FROM {space.pages}")
        conn.execute(f"DELETE FROM {space.halves}")
        conn.execute("DELETE FROM meta WHERE key IN (?, ?)", (space.params_key, space.recall_key))
        _next_stamp(conn, space)


def _read_page(conn: apsw.Connection, space: VectorSpace, page_id: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    row = conn.execute(f"SELECT ids, codes FROM {space.pages} WHERE page_id = ?", (page_id,)).fetchone()
    if row is None:
        return np.empty(0, dtype=np.int64), np.empty((0, dim), dtype=np.int8)
    return np.frombuffer(row[0], dtype=np.int64), np.frombuffer(row[1], dtype=np.int8).reshape(-1, dim)


def _rewrite(conn: apsw.Connection, space: VectorSpace, ids: np.ndarray, new_codes: np.ndarray | None) -> None:
    """Put (new_codes given) or take out the codes of `ids` in their pages, one rewrite per page."""
    params = load_params(conn, space)
    if params is None or len(ids) == 0:
        return
    dim = len(params.mean)
    page_stamp = _next_stamp(conn, space)
    pages = ids >> PAGE_BITS
    for page in np.unique(pages):
        mask = pages == page
        old_ids, old_codes = _read_page(conn, space, int(page), dim)
        keep = ~np.isin(old_ids, ids[mask])
        merged_ids, merged_codes = old_ids[keep], old_codes[keep]
        if new_codes is not None:
            merged_ids = np.concatenate([merged_ids, ids[mask]])
            merged_codes = np.concatenate([merged_codes, new_codes[mask]])
            order = np.argsort(merged_ids, kind="stable")
            merged_ids, merged_codes = merged_ids[order], merged_codes[order]
        _write_page(conn, space, int(page), merged_ids, merged_codes, page_stamp)


def add(conn: apsw.Connection, ids: Sequence[int], vectors: np.ndarray, space: VectorSpace = CHUNKS) -> None:
    """Codes for vectors just inserted (the caller's transaction); nothing while no index is built."""
    params = load_params(conn, space)
    if params is None or len(ids) == 0:
        return
    _write_halves(conn, space, ids, vectors)
    _rewrite(conn, space, np.asarray(ids, dtype=np.int64), params.encode(vectors))


def remove(conn: apsw.Connection, ids: Sequence[int], space: VectorSpace = CHUNKS) -> None:
    """Take the codes of deleted vectors out (the caller's transaction)."""
    if load_params(conn, space) is None or len(ids) == 0:
        return
    conn.execute(f"DELETE FROM {space.halves} WHERE {space.halves_id} IN (SELECT value FROM json_each(?))",
                 (json.dumps([int(i) for i in ids]),))
    _rewrite(conn, space, np.asarray(ids, dtype=np.int64), None)


def page_stamps(conn: apsw.Connection, space: VectorSpace = CHUNKS) -> dict[int, int]:
    return dict(conn.execute(f"SELECT page_id, stamp FROM {space.pages}"))


def read_pages(conn: apsw.Connection, page_ids: Sequence[int], dim: int, space: VectorSpace = CHUNKS
               ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    return {page: _read_page(conn, space, page, dim) for page in page_ids}


def coded_count(conn: apsw.Connection, space: VectorSpace = CHUNKS) -> int:
    """How many vectors the index holds (the page blobs' lengths: no page is read)."""
    return conn.execute(f"SELECT coalesce(sum(length(ids)), 0) / 8 FROM {space.pages}").fetchone()[0]


def save_recall(conn: apsw.Connection, recall: float, queries: int, source: str, space: VectorSpace = CHUNKS) -> None:
    with conn:
        set_meta(conn, space.recall_key, json.dumps({"recall_at_50": round(recall, 4), "queries": queries,
                                               "source": source, "measured_at": _now()}))


def load_recall(conn: apsw.Connection, space: VectorSpace = CHUNKS) -> dict | None:
    raw = get_meta(conn, space.recall_key)
    return json.loads(raw) if raw else None


def float_vectors(conn: apsw.Connection, ids: np.ndarray, space: VectorSpace = CHUNKS) -> dict[int, np.ndarray]:
    """The vectors of `ids` (float16 copies, as float32) by id; an id deleted since is missing."""
    found, matrix = float_matrix(conn, ids, space)
    return dict(zip(found.tolist(), matrix))


def float_matrix(conn: apsw.Connection, ids: np.ndarray, space: VectorSpace = CHUNKS) -> tuple[np.ndarray, np.ndarray]:
    """The vectors of `ids` (float16 copies) for ranking candidates again, as (the ids found,
    float32 matrix, one row each); an id deleted since is missing."""
    rows = conn.execute(
        f"SELECT {space.halves_id}, half FROM {space.halves} WHERE {space.halves_id} IN (SELECT value FROM json_each(?))",
        (json.dumps([int(i) for i in ids]),)).fetchall()
    if not rows:
        return np.empty(0, dtype=np.int64), np.empty((0, 0), dtype=np.float32)
    # One conversion for all (the vector table has one dimension): a conversion per row was half
    # of a query's time at 100k vectors.
    found = np.fromiter((rowid for rowid, _ in rows), dtype=np.int64, count=len(rows))
    matrix = np.frombuffer(b"".join(blob for _, blob in rows), dtype=np.float16).reshape(len(rows), -1)
    return found, matrix.astype(np.float32)


def admitted(conn: apsw.Connection, ids: np.ndarray, allowed: tuple[str, Sequence]) -> set[int]:
    """Which of `ids` the subquery `allowed` (SQL selecting a column embedding_id, its arguments)
    returns: only the candidates are checked (the outer condition is pushed into the subquery)."""
    sql, args = allowed
    return {row[0] for row in conn.execute(
        f"SELECT DISTINCT embedding_id FROM ({sql}) WHERE embedding_id IN (SELECT value FROM json_each(?))",
        (*args, json.dumps([int(i) for i in ids])))}


def admitted_all(conn: apsw.Connection, allowed: tuple[str, Sequence]) -> set[int]:
    """Every embedding id the subquery `allowed` returns (a narrow filter's: few)."""
    sql, args = allowed
    return {row[0] for row in conn.execute(f"SELECT DISTINCT embedding_id FROM ({sql})", args)}


def sample_queries(conn: apsw.Connection, model_id: str, limit: int, space: VectorSpace = CHUNKS
                   ) -> tuple[str, list[np.ndarray]]:
    """Query vectors to measure the index's recall on: for chunks the owner's latest logged
    searches of this model (only the owner's keep one, migration 0011), else stored vectors
    picked at random (for notes always: a note's suggestions ask with its own vector)."""
    if space == CHUNKS:
        logged = [np.frombuffer(row[0], dtype=np.float32) for row in conn.execute(
            "SELECT query_vector FROM main.search_log WHERE vector_model = ? AND query_vector IS NOT NULL"
            " ORDER BY search_id DESC LIMIT ?", (model_id, limit))]
        if logged:
            return "searches", logged
    owners = _OWNERS[space.name]
    return "vectors", [np.frombuffer(row[0], dtype=np.float32) for row in conn.execute(
        f"SELECT embedding FROM {space.vectors} WHERE rowid IN ({owners} ORDER BY random() LIMIT ?)", (model_id, limit))]


# Each space's ids stored for a model (the vectors one model made).
_OWNERS = {CHUNKS.name: "SELECT embedding_id FROM embeddings WHERE model_id = ?",
           NOTES.name: "SELECT note_vector_id FROM note_embeddings WHERE model_id = ? AND chunks > 0"}


def vector_count(conn: apsw.Connection, model_id: str, space: VectorSpace = CHUNKS) -> int:
    """How many vectors of the space `model_id` made."""
    return conn.execute(f"SELECT count(*) FROM ({_OWNERS[space.name]})", (model_id,)).fetchone()[0]
