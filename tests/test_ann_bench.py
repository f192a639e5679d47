"""bench/ann_bench.py --searched: the code index of an existing database compared read-only (the
measurements themselves are the bench's, not a test's)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from mindtui.store import open_database, vector_codes
from mindtui.store import vectors as vector_store

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import ann_bench  # noqa: E402


def test_searched_compares_each_prefilter_and_pool_and_writes_nothing(db_path, tmp_path, capsys):
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(600, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    conn = open_database(db_path)
    with conn:
        vector_store.insert_vectors(conn, "m", [f"h{i}" for i in range(600)], vectors)
    with conn:
        vector_codes.build(conn, "m")
    conn.close()
    before = db_path.read_bytes()
    queries = tmp_path / "q.npy"
    np.save(queries, vectors[:5] + 0.01)
    assert ann_bench.main(["--searched", str(db_path), "--queries-npy", str(queries), "--queries", "5",
                           "--prefilter", "0,100", "--rescore", "600,64"]) == 0
    table = capsys.readouterr().out
    assert "600 vectors, 5 queries" in table
    rows = {line.split("  ")[0]: line.split() for line in table.splitlines() if "+ rescore" in line}
    assert sorted(rows) == ["int4 top 100 + int8 + rescore 600", "int4 top 100 + int8 + rescore 64",
                            "int8 numkong + rescore 600", "int8 numkong + rescore 64"]
    assert float(rows["int8 numkong + rescore 600"][-7]) == 1.0  # every vector rescored: the exact top 50
    assert db_path.read_bytes() == before
