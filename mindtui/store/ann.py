"""Vector search over a code index (vector_codes.py; chunks' or notes') in memory: the int8 codes of every vector
scanned exactly with SIMD int8 dot products (numkong), the best `rescore` of them ranked again by
their float16 copies (vector_halves, one b-tree row each).

Why an exact scan of codes and not a graph or lists: real e5 queries are crowded (the cosine at
rank 10 is 0.843, at rank 5,000 still 0.813 on a million hub-like chunks), so anything that looks
at a part of the data misses: IVF probing 3 % of its lists 0.41 recall@50, HNSW (M=32, ef=512)
0.79, PCA-96 0.45, centred binary codes with 3,000 rescored 0.84. The int8 scan reads a quarter of
the bytes of the float scan with the same ranking up to a few hundred places (bench/ann_bench.py).

The codes are read from the file once per process, database and space (a million vectors are 384 MB);
a query checks one meta row (the stamp) and reads again only the pages whose stamp moved.
Used only where `configure` said so for the connection (search.ann_min_vectors and
search.ann_rescore, config/mindtui.yaml), above that many vectors; else the exact scan runs.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

import apsw

from mindtui.lazy_import import lazy_module
from mindtui.store import vector_codes

np = lazy_module("numpy")  # a full-text search never imports it (see lazy_import)


# One thread scans as fast as two on the 2-core machine (a million codes: 0.17x vs 0.18x of
# numpy's float scan; 100k: 0.28x vs 0.35x, bench/ann_bench.py) and leaves a core to the rest.
SCAN_THREADS = 1


@dataclass(frozen=True)
class AnnSettings:
    min_vectors: int  # below: the exact sqlite-vec scan (fast enough, and exact)
    rescore: int  # candidates ranked again by their float vectors


_settings: "weakref.WeakKeyDictionary[apsw.Connection, AnnSettings]" = weakref.WeakKeyDictionary()


def configure(conn: apsw.Connection, min_vectors: int, rescore: int) -> None:
    """Let this connection's vector searches use the code index (from search settings)."""
    _settings[conn] = AnnSettings(int(min_vectors), int(rescore))


def forget(conn: apsw.Connection) -> None:
    _settings.pop(conn, None)


def settings_of(conn: apsw.Connection) -> AnnSettings | None:
    return _settings.get(conn)


@dataclass(frozen=True)
class _Snapshot:
    """One consistent state of the codes: what a search reads while another thread refreshes."""
    space: vector_codes.VectorSpace
    fit_id: str
    stamp: int
    params: vector_codes.CodeParams
    page_stamps: dict
    pages: dict  # page_id -> (ids, codes)
    ids: np.ndarray  # every coded embedding id, in page order
    codes: np.ndarray  # their codes, one row each

    def __len__(self) -> int:
        return len(self.ids)


class _CodeCache:
    def __init__(self, space: vector_codes.VectorSpace) -> None:
        self.space = space
        self.lock = threading.Lock()
        self.snapshot: _Snapshot | None = None

    def current(self, conn: apsw.Connection) -> _Snapshot | None:
        """The codes as this connection's database holds them now (None: no index built)."""
        now = vector_codes.stamp(conn, self.space)
        snapshot = self.snapshot
        if snapshot is not None and snapshot.stamp == now:
            return snapshot
        with self.lock:
            if self.snapshot is not None and self.snapshot.stamp == now:
                return self.snapshot
            self.snapshot = _refreshed(conn, self.space, self.snapshot, now)
            return self.snapshot


def _refreshed(conn: apsw.Connection, space: vector_codes.VectorSpace, old: _Snapshot | None, now: int
               ) -> _Snapshot | None:
    params = vector_codes.load_params(conn, space)
    if params is None:
        return None
    dim = len(params.mean)
    stamps = vector_codes.page_stamps(conn, space)
    kept = old.pages if old is not None and old.fit_id == params.fit_id else {}
    old_stamps = old.page_stamps if kept else {}
    changed = [page for page, page_stamp in stamps.items() if old_stamps.get(page) != page_stamp]
    pages = {page: kept[page] for page in stamps if page not in changed}
    pages.update(vector_codes.read_pages(conn, changed, dim, space))
    order = sorted(pages)
    if order:
        ids = np.concatenate([pages[p][0] for p in order])
        codes = np.concatenate([pages[p][1] for p in order])
    else:
        ids, codes = np.empty(0, dtype=np.int64), np.empty((0, dim), dtype=np.int8)
    # The pages kept for the next refresh are views of the one array searched (one copy in memory).
    views, start = {}, 0
    for page in order:
        end = start + len(pages[page][0])
        views[page] = (ids[start:end], codes[start:end])
        start = end
    return _Snapshot(space, params.fit_id, now, params, stamps, views, ids, codes)


_caches: dict[tuple[str, str], _CodeCache] = {}
_by_connection: "weakref.WeakKeyDictionary[apsw.Connection, dict[str, _CodeCache]]" = weakref.WeakKeyDictionary()
_caches_lock = threading.Lock()


def _cache(conn: apsw.Connection, space: vector_codes.VectorSpace) -> _CodeCache:
    """One cache per database file and space for the whole process (every pooled connection
    shares it); a connection to a file with no name (in memory) has its own."""
    name = conn.filename
    with _caches_lock:
        if not name:
            return _by_connection.setdefault(conn, {}).setdefault(space.name, _CodeCache(space))
        return _caches.setdefault((name, space.name), _CodeCache(space))


def index_for(conn: apsw.Connection, space: vector_codes.VectorSpace = vector_codes.CHUNKS) -> _Snapshot | None:
    """The code index of `space` this connection's searches use, None when the exact scan serves
    (not configured, no index built, or fewer vectors than search.ann_min_vectors)."""
    chosen = _settings.get(conn)
    if chosen is None:
        return None
    snapshot = _cache(conn, space).current(conn)
    if snapshot is None or len(snapshot) < max(1, chosen.min_vectors):
        return None
    return snapshot


def candidates_among(snapshot: _Snapshot, query: np.ndarray, ids: np.ndarray, count: int) -> np.ndarray:
    """candidates() over only the coded vectors among `ids` (a narrow filter's): their codes
    gathered and scanned alone (a few thousand of a million cost next to nothing)."""
    rows = np.searchsorted(snapshot.ids, ids)  # the snapshot's ids ascend (pages in order, ids within them)
    rows = rows[(rows < len(snapshot.ids)) & (snapshot.ids[np.minimum(rows, len(snapshot.ids) - 1)] == ids)]
    subset = _Snapshot(snapshot.space, snapshot.fit_id, snapshot.stamp, snapshot.params, {}, {}, snapshot.ids[rows],
                       snapshot.codes[rows])
    return candidates(subset, query, count)


def candidates(snapshot: _Snapshot, query: np.ndarray, count: int) -> np.ndarray:
    """The embedding ids of the `count` best codes for the query, best first. The code score is
    the query's inner product with (vector - mean): the mean's share is the same for every
    vector, so the order is the cosine order up to the codes' rounding."""
    count = min(int(count), len(snapshot))
    if count <= 0:
        return np.empty(0, dtype=np.int64)
    weighted = np.asarray(query, dtype=np.float32) * snapshot.params.scale
    top = float(np.abs(weighted).max()) or 1.0
    query_codes = np.clip(np.rint(weighted / top * 127), -127, 127).astype(np.int8)
    return snapshot.ids[scan(query_codes, snapshot.codes, count)]


def scan(query_codes: np.ndarray, codes: np.ndarray, count: int) -> np.ndarray:
    """The rows of the `count` best codes, best first, by numkong's SIMD int8 dot products
    (bench/ann_bench.py puts usearch's exact search here to compare)."""
    import numkong

    scores = np.asarray(numkong.cdist(query_codes[None, :], codes, metric="dot", threads=SCAN_THREADS,
                                      out_dtype="float32")).ravel()
    best = np.argpartition(-scores, count - 1)[:count] if count < len(scores) else np.arange(len(scores))
    return best[np.argsort(-scores[best], kind="stable")]


def rescored(conn: apsw.Connection, ids: np.ndarray, query: np.ndarray, k: int,
             space: vector_codes.VectorSpace = vector_codes.CHUNKS) -> list[tuple[int, float]]:
    """(id, cosine distance) of the `k` nearest of `ids` by their float16 copies, as sqlite-vec
    computes the distance (to ~1e-4). An id whose vector was deleted since is left out."""
    if len(ids) == 0:
        return []
    found_ids, matrix = vector_codes.float_matrix(conn, ids, space)
    if len(found_ids) == 0:
        return []
    query = np.asarray(query, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(query) or 1.0)
    distances = 1.0 - (matrix @ query) / np.where(norms == 0, 1.0, norms)
    order = np.lexsort((found_ids, distances))[:k]
    return [(int(found_ids[i]), float(distances[i])) for i in order]
