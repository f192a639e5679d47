"""The vector code index (issue 3.2 items 2 and 3): int8 codes kept with the vectors in the one
file, searched in memory above search.ann_min_vectors, filters keeping their pool over it, and
its sampled recall in the owner's status."""

from __future__ import annotations

import numpy as np
import pytest

from fakes import DeterministicFakeEmbedder, ModelsFromCallables
from conftest import imported
from mindtui.audience import Audience
from mindtui.config import load_settings
from mindtui.models.holder import ModelHolder
from mindtui.models.sweep import run_embed_sweep
from mindtui.search.engine import SearchEngine, SearchOptions
from mindtui.service.core import Service
from mindtui.store import ann, open_database, vector_codes
from mindtui.store import vectors as vector_store

DIM = 384


def crowded(n: int, seed: int) -> np.ndarray:
    """Unit vectors sharing a large common component, as e5's do (their cosines crowd together)."""
    rng = np.random.default_rng(seed)
    common = rng.normal(size=DIM).astype(np.float32)
    block = common / np.linalg.norm(common) + 0.04 * rng.normal(size=(n, DIM)).astype(np.float32)
    return (block / np.linalg.norm(block, axis=1, keepdims=True)).astype(np.float32)


def stored_codes(conn, space=vector_codes.CHUNKS) -> dict[int, np.ndarray]:
    pages = vector_codes.read_pages(conn, list(vector_codes.page_stamps(conn, space)), DIM, space)
    return {int(i): c for ids, codes in pages.values() for i, c in zip(ids, codes)}


def every_vector(conn, space=vector_codes.CHUNKS) -> dict[int, np.ndarray]:
    return {rowid: np.frombuffer(blob, dtype=np.float32)
            for rowid, blob in conn.execute(f"SELECT rowid, embedding FROM {space.vectors}")}


@pytest.fixture
def conn(db_path):
    connection = open_database(db_path)
    yield connection
    connection.close()


def insert(conn, names, vectors, model="m"):
    with conn:
        vector_store.insert_vectors(conn, model, names, vectors)


def halves(conn, space=vector_codes.CHUNKS) -> dict[int, np.ndarray]:
    return {i: np.frombuffer(b, dtype=np.float16)
            for i, b in conn.execute(f"SELECT {space.halves_id}, half FROM {space.halves}")}


def test_codes_follow_every_insert_and_delete_once_built(conn):
    vectors = crowded(300, 1)
    insert(conn, [f"h{i}" for i in range(200)], vectors[:200])
    assert vector_codes.load_params(conn) is None and stored_codes(conn) == {}  # none before the build
    with conn:
        params = vector_codes.build(conn, "m")
    insert(conn, [f"h{i}" for i in range(200, 300)], vectors[200:])  # after: in the same transaction
    floats = every_vector(conn)
    codes = stored_codes(conn)
    assert sorted(codes) == sorted(floats) and vector_codes.coded_count(conn) == 300
    copies = halves(conn)
    for rowid, vector in floats.items():
        assert np.array_equal(codes[rowid], params.encode(vector[None, :])[0])
        assert np.array_equal(copies[rowid], vector.astype(np.float16))
    with conn:  # no chunk holds these texts: delete_orphans takes every vector, and its codes
        assert vector_store.delete_orphans(conn, "m") == 300
    assert stored_codes(conn) == {} and vector_codes.coded_count(conn) == 0 and halves(conn) == {}


def test_ids_across_pages_keep_one_row_per_page(conn):
    vectors = crowded(3, 2)
    with conn:
        for rowid in (5, 4096 * 2 + 1):  # two pages
            conn.execute("INSERT INTO embeddings (embedding_id, model_id, content_hash, dim, created_at)"
                         " VALUES (?, 'm', ?, 384, 'now')", (rowid, f"x{rowid}"))
            conn.execute("INSERT INTO vec_chunks (rowid, embedding) VALUES (?, ?)", (rowid, vectors[0].tobytes()))
        vector_codes.build(conn, "m")
    insert(conn, ["new"], vectors[1:2])
    assert sorted(vector_codes.page_stamps(conn)) == [0, 2]
    assert sorted(stored_codes(conn)) == [5, 4096 * 2 + 1, 4096 * 2 + 2]


def test_a_failure_between_vectors_and_codes_leaves_neither_and_a_rerun_equals_a_clean_run(conn, tmp_path, monkeypatch):
    vectors = crowded(120, 3)
    insert(conn, [f"h{i}" for i in range(100)], vectors[:100])
    with conn:
        vector_codes.build(conn, "m")
    before = (every_vector(conn), stored_codes(conn), vector_codes.stamp(conn))

    def dies(*args):
        raise KeyboardInterrupt  # as a kill: after the vectors are written, before their codes are
    monkeypatch.setattr(vector_codes, "_write_page", dies)
    with pytest.raises(KeyboardInterrupt):
        insert(conn, [f"h{i}" for i in range(100, 120)], vectors[100:])
    after = (every_vector(conn), stored_codes(conn), vector_codes.stamp(conn))
    assert after[0].keys() == before[0].keys() and after[1].keys() == before[1].keys() and after[2] == before[2]
    monkeypatch.undo()
    insert(conn, [f"h{i}" for i in range(100, 120)], vectors[100:])  # the rerun

    clean = open_database(tmp_path / "clean.db")
    try:
        insert(clean, [f"h{i}" for i in range(100)], vectors[:100])
        with clean:
            vector_codes.build(clean, "m")
        insert(clean, [f"h{i}" for i in range(100, 120)], vectors[100:])
        got, want = stored_codes(conn), stored_codes(clean)
        assert got.keys() == want.keys() and all(np.array_equal(got[i], want[i]) for i in got)
    finally:
        clean.close()


def test_the_code_index_ranks_as_the_exact_scan_when_its_pool_covers_the_vectors(conn):
    vectors = crowded(1500, 4)
    insert(conn, [f"h{i}" for i in range(1500)], vectors)
    with conn:
        vector_codes.build(conn, "m")
    queries = crowded(20, 5)
    exact = [vector_store.knn(conn, q, 50) for q in queries]  # not configured: the exact scan
    ann.configure(conn, 1, 1500, 0)
    assert vector_store.ann.index_for(conn) is not None
    for query, want in zip(queries, exact):
        got = vector_store.knn(conn, query, 50)
        # ranked again by float16 copies: the distances to ~1e-4, places swapped only within that
        assert np.allclose([h.distance for h in got], [h.distance for h in want], atol=2e-4)
        swapped = [(g, w) for g, w in zip(got, want) if g.embedding_id != w.embedding_id]
        assert all(abs(g.distance - w.distance) < 2e-4 for g, w in swapped)
    ann.configure(conn, 1, 300, 600)  # a pool of a fifth of them (of the int4 best 600): the same top 50
    recall = np.mean([len({h.embedding_id for h in vector_store.knn(conn, q, 50)}
                          & {h.embedding_id for h in want}) / 50 for q, want in zip(queries, exact)])
    assert recall >= 0.95
    ann.configure(conn, 1501, 300, 600)  # fewer vectors than ann_min_vectors: the exact scan
    assert vector_store.ann.index_for(conn) is None


def test_a_process_reads_again_only_the_pages_that_changed(conn, monkeypatch):
    vectors = crowded(10, 6)
    with conn:
        for rowid in (1, 4097):  # two pages
            conn.execute("INSERT INTO embeddings (embedding_id, model_id, content_hash, dim, created_at)"
                         " VALUES (?, 'm', ?, 384, 'now')", (rowid, f"x{rowid}"))
            conn.execute("INSERT INTO vec_chunks (rowid, embedding) VALUES (?, ?)", (rowid, vectors[rowid % 9].tobytes()))
        vector_codes.build(conn, "m")
    ann.configure(conn, 1, 10, 0)
    assert len(ann.index_for(conn)) == 2
    read = []
    real_read = vector_codes.read_pages
    monkeypatch.setattr(vector_codes, "read_pages", lambda c, pages, dim, space: read.append(sorted(pages)) or real_read(c, pages, dim, space))
    assert len(ann.index_for(conn)) == 2 and read == []  # nothing moved: nothing read
    insert(conn, ["new"], vectors[5:6])  # embedding id 4098: the second page
    snapshot = ann.index_for(conn)
    assert read == [[1]] and sorted(snapshot.ids.tolist()) == [1, 4097, 4098]


def narrow_filter_vault(vault):
    for i in range(400):
        vault.write(f"Alltag/N{i:03d}.md", f"Notiz {i} über den Alltag und anderes.\n")
    for i in range(60):  # 15 %: wide enough for the candidates of the code index
        vault.write(f"Oft/O{i:02d}.md", f"---\ntype: oft\n---\nEine häufige Notiz {i} über Planeten.\n")
    vault.write("Selten/A.md", "---\ntype: selten\n---\nEine seltene Notiz über Kometen.\n")
    vault.write("Selten/B.md", "---\ntype: selten\n---\nNoch eine seltene Notiz über Meteore.\n")


@pytest.mark.parametrize("note_type, pool, expected", [("selten", 2, 2), ("oft", 20, 20)])
def test_filters_keep_their_pool_over_the_code_index(vault, db_path, monkeypatch, note_type, pool, expected):
    """A narrow filter (0.5 %) has its ids' codes scanned alone, a wider one the code index's
    candidates the filter admits; both fill their pool, and equal the exact scan's notes."""
    narrow_filter_vault(vault)
    fake = DeterministicFakeEmbedder()
    overrides = {"min_cosine": -1.0, "candidate_pool": pool, "graph_expansion": False, "ann_rescore": 20}
    exact_settings = load_settings(overrides={"search": overrides})
    ann_settings = load_settings(overrides={"search": {**overrides, "ann_min_vectors": 10}})
    options = SearchOptions(mode="vector", log=False, limit=pool, note_type=note_type)
    with imported(db_path, vault.root) as conn:
        run_embed_sweep(conn, fake, batch_size=64)
        want = SearchEngine(conn, exact_settings, ModelsFromCallables(embedder=lambda: fake)).search(
            "Sterne am Himmel", options)
        vector_store.code_index_upkeep(conn, ann_settings.search, fake.model_id)
        narrow = []
        real_among = ann.candidates_among
        monkeypatch.setattr(ann, "candidates_among", lambda *a: narrow.append(1) or real_among(*a))
        monkeypatch.setattr(vector_store, "exact_knn_within", None)  # never with the index on
        engine = SearchEngine(conn, ann_settings, ModelsFromCallables(embedder=lambda: fake))
        assert ann.index_for(conn) is not None
        got = engine.search("Sterne am Himmel", options)
    assert len(got.results) == expected
    assert [r.path for r in got.results] == [r.path for r in want.results]
    assert bool(narrow) == (note_type == "selten")


def test_the_nightly_builds_the_index_and_the_owners_status_shows_its_recall(vault, db_path):
    for i in range(30):
        vault.write(f"N{i}.md", f"# Notiz {i}\n\nText {i} über etwas anderes.\n")
    settings = load_settings(overrides={"search": {"ann_min_vectors": 5, "ann_recall_sample": 10}}).with_values(
        {"db": str(db_path)})
    fake = DeterministicFakeEmbedder()
    holder = ModelHolder(embedder_factory=lambda settings, say: fake)
    with Service(settings, audience=Audience.OWNER, models=holder) as owner:
        result = owner.run_job("nightly", steps=["import", "embed", "maintain"], vault=vault.root)
        assert result.ok
        report = result.steps[-1].report["vector_index"]
        assert report["vector_index"] == "codes" and report["recall_at_50"] == 1.0
        assert report["notes"]["vector_index"] == "codes" and report["notes"]["recall_at_50"] == 1.0
        status = owner.status()["vector_index"]
    assert status["built"] and status["vectors_coded"] == 30
    assert status["notes"]["built"] and status["notes"]["vectors_coded"] == 30
    assert status["recall"]["recall_at_50"] == 1.0 and status["recall"]["queries"] == 10
    assert status["recall"]["source"] == "vectors"  # no logged searches yet
    with Service(settings, audience=Audience.AGENT, models=holder) as agent:
        assert "vector_index" not in agent.status()  # it counts hidden notes' vectors too


def test_hybrid_search_over_the_code_index_gives_the_exact_scans_top_results(embedded_sample_db, real_model,
                                                                            tmp_path):
    """The real e5 model on the sample vault: the same top results with the index as without."""
    import shutil

    from mindtui.search.engine import make_search_engine

    db = tmp_path / "sample.db"
    shutil.copy(embedded_sample_db, db)  # the session's database is read only
    queries = ["Wie viele Zettel hatte Luhmann?", "how fast do we forget what we learned",
               "Formel zum Kombinieren von Rankings", "welches Präfix braucht e5 für Anfragen"]
    exact_settings = load_settings()
    ann_settings = load_settings(overrides={"search": {"ann_min_vectors": 1, "ann_rescore": 40}})
    conn = open_database(db)
    try:
        model_id = vector_store.models_with_vectors(conn).popitem()[0]
        exact = make_search_engine(conn, exact_settings)
        want = [[r.path for r in exact.search(q, SearchOptions(limit=5, log=False)).results] for q in queries]
        report = vector_store.code_index_upkeep(conn, ann_settings.search, model_id)
        assert report["vector_index"] == "codes" and report["recall_at_50"] >= 0.95
        engine = make_search_engine(conn, ann_settings)
        assert ann.index_for(conn) is not None
        got = [[r.path for r in engine.search(q, SearchOptions(limit=5, log=False)).results] for q in queries]
    finally:
        conn.close()
    assert got == want


# The embed sweep in a child that SIGKILLs itself at the N-th commit ("before": in the commit
# hook, the transaction is lost; N = 0: no kill). Both code indexes are built already: every batch
# writes vectors and codes, the first one deletes the vectors of a changed note too, and the note
# vectors' pages then write note vectors and their codes (and take out the changed note's).
SWEEP_KILLED_AT = """
import os, signal, sys
import apsw
sys.path.insert(0, sys.argv[3])
from fakes import DeterministicFakeEmbedder
from mindtui.models.sweep import run_embed_sweep
from mindtui.store import open_database

db, when = sys.argv[1], int(sys.argv[2])
commits = [0]

def seen():
    commits[0] += 1
    if commits[0] == when:
        os.kill(os.getpid(), signal.SIGKILL)
    return False

conn = open_database(db)
conn.set_commit_hook(seen)
run_embed_sweep(conn, DeterministicFakeEmbedder(), batch_size=4)
sys.exit(3 if when else 0)
"""


def sweep_killed_at(db, when: int) -> int:
    import subprocess
    import sys
    from pathlib import Path

    return subprocess.run([sys.executable, "-c", SWEEP_KILLED_AT, str(db), str(when), str(Path(__file__).parent)],
                          capture_output=True, text=True, timeout=300).returncode


def index_state(db, space=vector_codes.CHUNKS) -> tuple:
    conn = open_database(db)
    try:
        codes = stored_codes(conn, space)
        return (sorted(every_vector(conn, space)), {i: c.tobytes() for i, c in codes.items()},
                vector_codes.coded_count(conn, space), {i: h.tobytes() for i, h in halves(conn, space).items()})
    finally:
        conn.close()


def both_indexes(db) -> tuple:
    return index_state(db), index_state(db, vector_codes.NOTES)


def test_a_sweep_killed_at_any_commit_then_rerun_leaves_the_codes_of_a_clean_run(vault, db_path, tmp_path):
    import shutil

    from conftest import run_import

    for i in range(12):
        vault.write(f"A{i}.md", f"Erste Notiz {i} über Gärten.\n")
    run_import(db_path, vault.root)
    conn = open_database(db_path)
    try:
        run_embed_sweep(conn, DeterministicFakeEmbedder(), batch_size=8)
        with conn:
            vector_codes.build(conn, "fake-hash-embedder")
            vector_codes.build(conn, "fake-hash-embedder", vector_codes.NOTES)
    finally:
        conn.close()
    for i in range(10):
        vault.write(f"B{i}.md", f"Zweite Notiz {i} über Wälder.\n")
    vault.write("A0.md", "Eine geänderte Notiz.\n")  # its old vector is an orphan now
    run_import(db_path, vault.root)
    conn = open_database(db_path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()

    clean = tmp_path / "clean.db"
    shutil.copy(db_path, clean)
    assert sweep_killed_at(clean, 0) == 0
    want = both_indexes(clean)
    for space in want:  # every vector coded, no other
        assert space[0] == sorted(space[1]) == sorted(space[3]) and space[2] == len(space[0])
    assert len(want[1][0]) == 22  # a note vector for each note
    when = 1
    while True:
        killed = tmp_path / f"killed{when}.db"
        shutil.copy(db_path, killed)
        code = sweep_killed_at(killed, when)
        if code == 3:  # the sweep ended before its when-th commit: every point was tried
            break
        assert code == -9, code
        assert sweep_killed_at(killed, 0) == 0  # the rerun
        assert both_indexes(killed) == want, when
        when += 1
    assert when > 3


def test_a_recall_below_the_floor_fits_the_codes_again_and_a_request_refits_them(conn):
    vectors = crowded(400, 7)
    insert(conn, [f"h{i}" for i in range(400)], vectors)
    search = load_settings(overrides={"search": {"ann_min_vectors": 100, "ann_rescore": 60,
                                                 "ann_recall_sample": 20, "ann_recall_floor": 0.9}}).search
    first = vector_store.code_index_upkeep(conn, search, "m")
    assert "built_s" in first and first["recall_at_50"] >= 0.9 and "refit_for_recall" not in first
    fit = vector_codes.load_params(conn).fit_id
    assert "built_s" not in vector_store.code_index_upkeep(conn, search, "m")  # kept: no full rebuild nightly
    assert vector_codes.load_params(conn).fit_id == fit
    with conn:  # codes gone bad (as if the vectors drifted far from the fit): the sampled recall falls
        conn.execute("UPDATE vector_code_pages SET codes = zeroblob(length(codes)), stamp = ?",
                     (vector_codes._next_stamp(conn),))
    again = vector_store.code_index_upkeep(conn, search, "m")
    assert again["refit_for_recall"] < 0.9 and again["recall_at_50"] >= 0.9
    assert vector_codes.load_params(conn).fit_id != fit
    fit = vector_codes.load_params(conn).fit_id
    assert "built_s" in vector_store.code_index_upkeep(conn, search, "m", refit=True)
    assert vector_codes.load_params(conn).fit_id != fit


def test_a_new_model_drops_the_codes_of_the_old_one(conn):
    insert(conn, ["a", "b"], crowded(2, 8), model="old")
    with conn:
        vector_codes.build(conn, "old")
        vector_store.delete_other_models(conn, "new")
    assert vector_codes.load_params(conn) is None and vector_codes.coded_count(conn) == 0


def test_a_database_made_again_at_the_same_path_is_not_served_from_the_old_ones_codes(db_path):
    import shutil

    for seed in (10, 11):
        if db_path.parent.exists():
            shutil.rmtree(db_path.parent)
        conn = open_database(db_path)
        try:
            insert(conn, [f"h{i}" for i in range(20)], crowded(20, seed))
            with conn:
                vector_codes.build(conn, "m")
            ann.configure(conn, 1, 20, 0)
            snapshot = ann.index_for(conn)
            assert snapshot.fit_id == vector_codes.load_params(conn).fit_id
        finally:
            conn.close()


def test_candidates_float_vectors_are_their_float16_copies_in_one_conversion(conn):
    """What the rescoring reads (one array for all candidates): each id's float16 copy, an id
    without a vector left out."""
    vectors = crowded(40, 3)
    insert(conn, [f"h{i}" for i in range(40)], vectors)
    with conn:
        vector_codes.build(conn, "m")  # the float16 copies are written with the codes
    copies = halves(conn)
    assert len(copies) == 40
    wanted = np.array(sorted(copies)[:25] + [10**9], dtype=np.int64)
    found = vector_codes.float_vectors(conn, wanted)
    assert sorted(found) == sorted(copies)[:25] and vector_codes.float_vectors(conn, wanted[-1:]) == {}
    for rowid, vector in found.items():
        assert vector.dtype == np.float32 and np.array_equal(vector, copies[rowid].astype(np.float32))
    ids, matrix = vector_codes.float_matrix(conn, wanted)  # what ann.rescored ranks: the same, as one matrix
    assert sorted(ids.tolist()) == sorted(found) and matrix.dtype == np.float32 and matrix.shape == (25, DIM)
    assert all(np.array_equal(row, found[int(i)]) for i, row in zip(ids, matrix))
    assert [len(part) for part in vector_codes.float_matrix(conn, wanted[-1:])] == [0, 0]
