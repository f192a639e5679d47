"""The code index's first stage (store/ann.py): int4 codes derived in memory from the int8 ones,
scanned whole, and only their best search.ann_prefilter scanned again as int8 codes."""

from __future__ import annotations

import numpy as np
import pytest

from mindtui.store import ann, open_database, vector_codes
from mindtui.store import vectors as vector_store

DIM = 384


def clustered(n: int, clusters: int, seed: int) -> np.ndarray:
    """Unit vectors around a few centres that share a common component (e5's crowding)."""
    rng = np.random.default_rng(seed)
    common = rng.normal(size=DIM)
    centres = common / np.linalg.norm(common) + 0.3 * rng.normal(size=(clusters, DIM)) / np.sqrt(DIM)
    block = centres[rng.integers(clusters, size=n)] + 0.15 * rng.normal(size=(n, DIM)) / np.sqrt(DIM)
    return (block / np.linalg.norm(block, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture
def conn(db_path):
    connection = open_database(db_path)
    yield connection
    connection.close()


def store(conn, ids, vectors) -> None:
    """Vectors under chosen embedding ids (pages and blocks of the code index follow the ids)."""
    with conn:
        for rowid, vector in zip(ids, vectors):
            conn.execute("INSERT INTO embeddings (embedding_id, model_id, content_hash, dim, created_at)"
                         " VALUES (?, 'm', ?, 384, 'now')", (int(rowid), f"x{rowid}"))
            conn.execute("INSERT INTO vec_chunks (rowid, embedding) VALUES (?, ?)", (int(rowid), vector.tobytes()))


# Three blocks of int4 codes (a block holds 65,536 ids), none a multiple of 8 rows long.
SPREAD_IDS = np.concatenate([np.arange(1, 1502), np.arange(70_000, 70_999), np.arange(140_000, 140_997)])


@pytest.fixture
def indexed(conn):
    vectors = clustered(len(SPREAD_IDS), 12, 1)
    store(conn, SPREAD_IDS, vectors)
    with conn:
        vector_codes.build(conn, "m")
    return vectors


def test_the_int4_scan_returns_the_best_int4_products_across_blocks(conn, indexed):
    ann.configure(conn, 1, 64, 300)
    snapshot = ann.index_for(conn)
    assert len(snapshot.blocks) == 3 and [b.stop - b.start for b in snapshot.blocks] == [1501, 999, 997]
    coarse = ann.coarse_codes(snapshot.codes).astype(np.int64)
    for query in clustered(10, 12, 2):
        weighted = query * snapshot.params.scale
        unit = weighted / np.abs(weighted).max()
        rows = ann.coarse_scan(snapshot, ann.coarse_query(unit), 300)
        products = coarse @ np.rint(unit * 7).astype(np.int64)  # the int4 products, computed plainly
        outside = np.setdiff1d(np.arange(len(snapshot)), rows)
        assert len(set(rows.tolist())) == 300 and products[rows].min() >= products[outside].max()


def test_the_prefiltered_search_keeps_the_exact_top_50(conn, indexed):
    queries = clustered(20, 12, 3)
    exact = [{h.embedding_id for h in vector_store.exact_knn(conn, q, 50)} for q in queries]
    ann.configure(conn, 1, 64, 300)  # the int8 codes of a tenth of the vectors are scanned
    recall = np.mean([len({h.embedding_id for h in vector_store.knn(conn, q, 50)} & want) / 50
                      for q, want in zip(queries, exact)])
    assert recall >= 0.97


def test_only_the_prefilters_candidates_are_scanned_as_int8_codes(conn, indexed, monkeypatch):
    scanned = []
    real_scan = ann.scan
    monkeypatch.setattr(ann, "scan", lambda q, codes, count: scanned.append(len(codes)) or real_scan(q, codes, count))
    query = clustered(1, 12, 4)[0]
    ann.configure(conn, 1, 64, 300)
    vector_store.knn(conn, query, 50)
    ann.configure(conn, 1, 64, 0)  # no prefilter: every int8 code
    vector_store.knn(conn, query, 50)
    ann.configure(conn, 1, 64, 2000)  # a prefilter passing more than half of them: every int8 code
    vector_store.knn(conn, query, 50)
    assert scanned == [300, len(SPREAD_IDS), len(SPREAD_IDS)]


def test_a_refresh_packs_again_only_the_block_that_changed_and_finds_the_new_vector(conn, indexed):
    ann.configure(conn, 1, 64, 300)
    before = ann.index_for(conn).blocks
    new = clustered(1, 3, 5)[0]  # near none of the stored clusters
    with conn:
        vector_store.insert_vectors(conn, "m", ["new"], new[None, :])
    new_id = conn.execute("SELECT embedding_id FROM embeddings WHERE content_hash = 'new'").fetchone()[0]
    after = ann.index_for(conn).blocks
    changed = [a.block_id for a, b in zip(after, before) if a.packed is not b.packed]
    assert changed == [new_id >> (vector_codes.PAGE_BITS + ann.BLOCK_PAGE_BITS)] and after[-1].stop == before[-1].stop + 1
    assert vector_store.knn(conn, new, 1)[0].embedding_id == new_id


@pytest.mark.parametrize("scores", [
    np.random.default_rng(6).integers(-5000, 5000, size=100_000).astype(np.int32),  # threshold from the sample
    np.zeros(20_000, dtype=np.int32),  # every score tied: whichever rows, as many as asked
    np.arange(20_000, dtype=np.int32)[::-1].copy(),  # the best rows first
    np.where(np.arange(20_000) % 16 == 0, 1000 + np.arange(20_000), 0).astype(np.int32),  # the best all sampled:
])  # too few pass the sample's threshold, the full argpartition answers
def test_best_rows_are_the_highest_scores(scores):
    for count in (1, 7, 300, 2_000):
        rows = ann.best_rows(scores, count)
        assert len(set(rows.tolist())) == count
        assert np.array_equal(np.sort(scores[rows]), np.sort(scores)[len(scores) - count:])


def test_the_int4_blocks_are_scored_on_two_threads_with_the_same_rows(conn, indexed, monkeypatch):
    import threading

    import numkong

    ann.configure(conn, 1, 64, 300)
    snapshot = ann.index_for(conn)
    weighted = clustered(1, 12, 7)[0] * snapshot.params.scale
    query = ann.coarse_query(weighted / np.abs(weighted).max())
    threads = set()
    real = numkong.dots_packed
    monkeypatch.setattr(numkong, "dots_packed", lambda *a: threads.add(threading.get_ident()) or real(*a))
    both = ann.coarse_scan(snapshot, query, 300)
    assert len(threads) == 2 and len(snapshot.blocks) == 3
    monkeypatch.setattr(ann, "COARSE_THREADS", 1)
    threads.clear()
    alone = ann.coarse_scan(snapshot, query, 300)
    assert len(threads) == 1 and sorted(both.tolist()) == sorted(alone.tolist())
