"""Vector search over a code index (vector_codes.py; chunks' or notes') in memory, in three stages:
int4 codes of every vector (derived here from the int8 codes, half their bytes) scanned with SIMD
int4 dot products (numkong), the int8 codes of the best `prefilter` of them scanned again, and
the best `rescore` of those ranked again by their float16 copies (vector_halves, one b-tree row
each). At 100k vectors the int8 scan alone took ~1.5 ms against a numpy float scan of ~4-5 ms on
an idle machine: the int4 scan reads half the bytes, and its top 1,000 hold the exact top 50 of
real queries (coverage 1.000 at 100k and at 1M, bench/ann_bench.py).

Why an exact scan of codes and not a graph or lists: real e5 queries are crowded (the cosine at
rank 10 is 0.843, at rank 5,000 still 0.813 on a million hub-like chunks), so anything that looks
at a part of the data misses: IVF probing 3 % of its lists 0.41 recall@50, HNSW (M=32, ef=512)
0.79, PCA-96 0.45, centred binary codes with 3,000 rescored 0.84. The int8 scan reads a quarter of
the bytes of the float scan with the same ranking up to a few hundred places (bench/ann_bench.py).

The codes are read from the file once per process, database and space (a million vectors are 384 MB
of int8 codes and 200 MB of int4 ones: numkong packs 200 bytes a row); a query checks one meta row
(the stamp) and reads again only the pages whose stamp moved (and derives again only the int4
blocks they fall in).
Used only where `configure` said so for the connection (search.ann_min_vectors,
search.ann_prefilter and search.ann_rescore, config/mindtui.yaml), above that many vectors; else
the exact scan runs.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, replace

import apsw

from mindtui.lazy_import import lazy_module
from mindtui.store import helper_threads, vector_codes

np = lazy_module("numpy")  # a full-text search never imports it (see lazy_import)


# One thread scans as fast as two on the 2-core machine (a million codes: 0.17x vs 0.18x of
# numpy's float scan; 100k: 0.28x vs 0.35x, bench/ann_bench.py) and leaves a core to the rest.
SCAN_THREADS = 1


# The int4 codes: the int8 code (4 standard deviations = 127) times COARSE_STEP, rounded and
# clipped to +-7 (2.5 standard deviations = 7; 2.5 kept more of the exact top 50 in the int4
# top 100-300 than 3.0 at 100k: 0.926 against 0.899 at 100).
COARSE_STEP = 4 / 127 * 7 / 2.5
# 16 pages (65,536 ids) a block of int4 codes: a refresh packs again only the blocks it changed.
BLOCK_PAGE_BITS = 4


@dataclass(frozen=True)
class AnnSettings:
    min_vectors: int  # below: the exact sqlite-vec scan (fast enough, and exact)
    rescore: int  # candidates ranked again by their float vectors
    prefilter: int  # candidates of the int4 scan whose int8 codes are scanned again (0: every int8 code)
    note_rescore: int | None = None  # the note vectors' own (None: as the chunks')
    note_prefilter: int | None = None

    def of(self, space: vector_codes.VectorSpace) -> "AnnSettings":
        """The settings a search of `space` uses: the note vectors have their own rescore and
        prefilter (search.ann_note_rescore / ann_note_prefilter: a note's vector is the mean of
        its chunks', and the means crowd so closely that int4 codes lose their order)."""
        if space != vector_codes.NOTES or self.note_rescore is None:
            return self
        return replace(self, rescore=self.note_rescore, prefilter=self.note_prefilter)


_settings: "weakref.WeakKeyDictionary[apsw.Connection, AnnSettings]" = weakref.WeakKeyDictionary()


def configure(conn: apsw.Connection, min_vectors: int, rescore: int, prefilter: int,
              note_rescore: int | None = None, note_prefilter: int | None = None) -> None:
    """Let this connection's vector searches use the code index (from search settings; the note
    vectors' rescore and prefilter default to the chunks')."""
    _settings[conn] = AnnSettings(int(min_vectors), int(rescore), int(prefilter),
                                  None if note_rescore is None else int(note_rescore),
                                  int(prefilter if note_prefilter is None else note_prefilter))


def forget(conn: apsw.Connection) -> None:
    _settings.pop(conn, None)


def reuse(conn: apsw.Connection, chosen: AnnSettings) -> None:
    """Give the connection settings it had before (settings_of), every field as it was."""
    _settings[conn] = chosen


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
    blocks: tuple = ()  # their int4 codes (_CoarseBlock), in row order; none: only the int8 scan

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True)
class _CoarseBlock:
    """The int4 codes of the pages of one block (page_id >> BLOCK_PAGE_BITS), packed for numkong."""
    block_id: int
    key: tuple  # (page, stamp) of each page in it: the same key, the same codes
    start: int  # its rows in the snapshot
    stop: int
    packed: object  # numkong.PackedMatrix of uint4: each code + 8, one row per vector
    offsets: np.ndarray  # int32, a row: 8 x the sum of its uint4 codes (see coarse_scan)


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
    old_blocks = {block.block_id: block for block in old.blocks} if kept else {}
    return _Snapshot(space, params.fit_id, now, params, stamps, views, ids, codes,
                     _coarse_blocks(order, stamps, views, old_blocks))


def _coarse_blocks(order: list[int], stamps: dict, views: dict, old_blocks: dict) -> tuple:
    """The int4 codes of every page, a block at a time; a block whose pages kept their stamps is
    the one packed before (deriving and packing a million vectors' takes ~0.8 s)."""
    grouped: dict[int, list[int]] = {}
    for page in order:
        grouped.setdefault(page >> BLOCK_PAGE_BITS, []).append(page)
    blocks, start = [], 0
    for block_id, pages in grouped.items():
        key = tuple((page, stamps[page]) for page in pages)
        stop = start + sum(len(views[page][0]) for page in pages)
        old = old_blocks.get(block_id)
        if old is not None and old.key == key:
            blocks.append(_CoarseBlock(block_id, key, start, stop, old.packed, old.offsets))
        elif stop > start:
            blocks.append(_CoarseBlock(block_id, key, start, stop,
                                       *_packed(np.concatenate([views[page][1] for page in pages]))))
        start = stop
    return tuple(blocks)


def _packed(codes: np.ndarray) -> tuple[object, np.ndarray]:
    """int8 codes as uint4 ones packed for numkong, and their rows' offsets (see coarse_scan).
    Padded with zero rows to a multiple of 8: numkong's scan of 65,535 rows took 0.95 ms, of
    65,536 0.69 (its kernels take 8 rows at a time)."""
    import numkong

    unsigned = coarse_codes(codes) + np.uint8(8)
    offsets = 8 * unsigned.sum(axis=1, dtype=np.int32)
    padded = np.zeros((-(-len(codes) // 8) * 8, unsigned.shape[1] + unsigned.shape[1] % 2), dtype=np.uint8)
    padded[:len(codes), :unsigned.shape[1]] = unsigned
    return numkong.dots_pack(nibbles(padded), dtype="uint4"), offsets


def coarse_codes(codes: np.ndarray) -> np.ndarray:
    """int8 codes (rows) as int4 ones: in [-7, 7], one a byte."""
    return np.clip(np.rint(codes * np.float32(COARSE_STEP)), -7, 7).astype(np.int8)


def nibbles(codes: np.ndarray) -> np.ndarray:
    """uint4 codes (rows of uint8 in [0, 15], an even number of columns) two a byte, the even
    dimension in the low nibble (as numkong reads them)."""
    return codes[:, 0::2] | (codes[:, 1::2] << 4)


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
    return candidates(subset, query, count, prefilter=0)


def candidates(snapshot: _Snapshot, query: np.ndarray, count: int, prefilter: int) -> np.ndarray:
    """The embedding ids of the `count` best codes for the query, best first. The code score is
    the query's inner product with (vector - mean): the mean's share is the same for every
    vector, so the order is the cosine order up to the codes' rounding. With int4 codes and more
    than twice max(prefilter, count) vectors, only the int4 scan's best max(prefilter, count)
    have their int8 codes scanned (`prefilter` 0: every int8 code is)."""
    count = min(int(count), len(snapshot))
    if count <= 0:
        return np.empty(0, dtype=np.int64)
    weighted = np.asarray(query, dtype=np.float32) * snapshot.params.scale
    top = float(np.abs(weighted).max()) or 1.0
    query_codes = np.clip(np.rint(weighted / top * 127), -127, 127).astype(np.int8)
    wide = max(int(prefilter), count)
    if prefilter <= 0 or not snapshot.blocks or 2 * wide >= len(snapshot):
        return snapshot.ids[scan(query_codes, snapshot.codes, count)]
    rows = coarse_scan(snapshot, coarse_query(weighted / top), wide)
    return snapshot.ids[rows[scan(query_codes, snapshot.codes[rows], count)]]


def coarse_query(unit: np.ndarray) -> np.ndarray:
    """The query's uint4 codes (its weights scaled to [-1, 1] as int4 codes + 8), packed."""
    unsigned = np.zeros((1, len(unit) + len(unit) % 2), dtype=np.uint8)  # an odd last dimension pairs with 0
    unsigned[0, :len(unit)] = np.rint(unit * 7) + 8
    return nibbles(unsigned)


def coarse_scan(snapshot: _Snapshot, query_nibbles: np.ndarray, count: int) -> np.ndarray:
    """The rows of the `count` best int4 codes for the query, in no order. uint4 (each code + 8:
    numkong's uint4 products are a sixth faster than its int4 ones) scores a row
    sum((c + 8)(q + 8)) = c.q + 8 sum(q) + 8 sum(c + 8): less the row's offset, 8 sum(c + 8),
    the int4 product up to the query's own constant. Every other block is scored on a second
    thread (COARSE_THREADS)."""
    import numkong

    scores = np.empty(len(snapshot), dtype=np.int32)

    def score(blocks) -> None:
        for block in blocks:
            found = np.asarray(numkong.dots_packed(query_nibbles, block.packed)).view(np.int32)  # < 2**31
            np.subtract(found[0, :block.stop - block.start], block.offsets, out=scores[block.start:block.stop])

    blocks = snapshot.blocks
    if COARSE_THREADS > 1 and len(blocks) > 1:
        other = helper_threads.pool("int4", COARSE_THREADS - 1).submit(score, blocks[1::2])
        score(blocks[0::2])
        other.result()
    else:
        score(blocks)
    return best_rows(scores, count)


# numkong's uint4 products let go of the GIL, so the int4 blocks are scored on two threads: a
# million codes (16 blocks) 21 -> 11 ms on the idle 2-core machine, where one thread reads ~9 GB/s
# and numpy's float scan, the yardstick, already uses both cores.
COARSE_THREADS = 2


SAMPLE_STEP = 16


def best_rows(scores: np.ndarray, count: int) -> np.ndarray:
    """The rows of the `count` highest scores, in no order. A threshold from every 16th score
    (the one about twice `count` rows pass) leaves argpartition only those rows: at 100k one
    comparison pass costs half of argpartition over all (0.07 against 0.14 ms); a threshold
    that lets fewer than `count` pass falls back to the full argpartition."""
    sample = scores[::SAMPLE_STEP]
    rank = 2 * count // SAMPLE_STEP
    if 1 <= rank < len(sample):
        threshold = np.partition(sample, len(sample) - rank)[len(sample) - rank]
        passing = np.flatnonzero(scores >= threshold)
        if len(passing) >= count:
            return passing[np.argpartition(scores[passing], len(passing) - count)[len(passing) - count:]]
    return np.argpartition(scores, len(scores) - count)[len(scores) - count:]


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
    # einsum and tolist: half of np.linalg.norm's and a per-item conversion's time on 64 rows
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix)) * (float(np.sqrt(query @ query)) or 1.0)
    distances = 1.0 - (matrix @ query) / np.where(norms == 0, 1.0, norms)
    order = np.lexsort((found_ids, distances))[:k]
    return list(zip(found_ids[order].tolist(), distances[order].tolist()))
