"""Note vectors (the normalised mean of a note's chunk vectors) and suggestions in one vector query.

Plumbing with the hash-seeded fake embedder (named so); the real model's suggestion quality is
tests/test_graph.py::test_suggestions_by_meaning_with_the_real_model (it goes through the same path).
"""

from __future__ import annotations

import numpy as np
import pytest
from fakes import DeterministicFakeEmbedder

from mindtui.audience import Audience
from mindtui.config import load_settings
from mindtui.graph.suggest import similar_notes
from mindtui.models.sweep import run_embed_sweep
from mindtui.store import ann, graph_store, open_database, vector_codes
from mindtui.store import note_vectors as note_vector_store
from mindtui.store import vectors as vector_store
from mindtui.store.visibility import restrict

from conftest import run_import

FAKE = "fake-hash-embedder"
LONG = "\n\n".join(f"## Teil {i}\n\n" + " ".join(f"Abschnitt {i} über Bohnen, Mühlen und Wasser, Satz {j}."
                                                    for j in range(30)) for i in range(20))


def write_vault(vault):
    vault.write("Kaffee.md", "# Kaffee\n\nÜber Kaffee.\n\n## Rösten\n\nBohnen rösten.\n")
    vault.write("Tee.md", "# Tee\n\nÜber Tee und Wasser.\n")
    vault.write("Lang.md", LONG + "\n")
    vault.write("Geheim.md", "---\nprivate: true\n---\n# Geheim\n\nÜber Kaffee, geheim.\n")
    vault.write("Aus.md", "---\nai_processing: none\n---\n# Aus\n\nNicht für Modelle.\n")


def sweep(db_path):
    conn = open_database(db_path)
    try:
        return run_embed_sweep(conn, DeterministicFakeEmbedder(), batch_size=4)
    finally:
        conn.close()


def swept(vault, db_path):
    write_vault(vault)
    run_import(db_path, vault.root)
    return sweep(db_path)


def chunk_mean(conn, note_id: str) -> np.ndarray:
    blobs = graph_store.first_chunk_vectors(conn, [note_id], FAKE, limit=10_000)[note_id]
    total = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1).sum(axis=0)
    return total / np.linalg.norm(total)


def stored(conn) -> dict[str, tuple[int, bytes | None]]:
    """note path -> (note_vector_id, vector blob or None)."""
    return {path: (vid, blob) for path, vid, blob in conn.execute(
        "SELECT n.path, ne.note_vector_id, v.embedding FROM note_embeddings ne JOIN notes n USING (note_id)"
        " LEFT JOIN vec_notes v ON v.rowid = ne.note_vector_id")}


def note_id(conn, path: str) -> str:
    return conn.execute("SELECT note_id FROM notes WHERE path = ?", (path,)).fetchone()[0]


def test_the_sweep_writes_each_readable_notes_mean_vector(vault, db_path):
    report = swept(vault, db_path)
    assert report.note_vectors["computed"] == 4  # not Aus.md (ai_processing: none)
    conn = open_database(db_path)
    rows = stored(conn)
    assert sorted(rows) == ["Geheim.md", "Kaffee.md", "Lang.md", "Tee.md"]
    for path in rows:
        vector = np.frombuffer(rows[path][1], dtype=np.float32)
        np.testing.assert_allclose(vector, chunk_mean(conn, note_id(conn, path)), atol=1e-5)
    conn.close()


def test_a_changed_note_gets_a_new_vector_and_the_others_are_not_recomputed(vault, db_path):
    swept(vault, db_path)
    conn = open_database(db_path)
    before = stored(conn)
    conn.close()
    vault.write("Tee.md", "# Tee\n\nÜber grünen Tee und Wasser.\n\n## Sorten\n\nSencha.\n")
    vault.write("Kaffee.md", "# Kaffee\n\nÜber Kaffee.\n\n## Rösten\n\nBohnen rösten.\n")  # same bytes
    run_import(db_path, vault.root)
    report = sweep(db_path)
    assert report.note_vectors == {"computed": 1, "kept": 0, "removed": 0}
    conn = open_database(db_path)
    after = stored(conn)
    assert after["Tee.md"][1] != before["Tee.md"][1]
    np.testing.assert_allclose(np.frombuffer(after["Tee.md"][1], dtype=np.float32),
                               chunk_mean(conn, note_id(conn, "Tee.md")), atol=1e-5)
    assert {p: after[p] for p in after if p != "Tee.md"} == {p: before[p] for p in before if p != "Tee.md"}
    conn.close()
    assert sweep(db_path).note_vectors == {"computed": 0, "kept": 0, "removed": 0}


def test_a_rewritten_note_with_the_same_chunks_keeps_its_vector(vault, db_path):
    swept(vault, db_path)
    # New bytes (a frontmatter field that changes no chunk text): the import rewrites the note.
    vault.write("Tee.md", "---\nstatus: draft\n---\n# Tee\n\nÜber Tee und Wasser.\n")
    run_import(db_path, vault.root)
    report = sweep(db_path)
    assert report.embedded == 0 and report.note_vectors == {"computed": 0, "kept": 1, "removed": 0}


def test_a_deleted_note_or_one_turned_off_for_models_loses_its_vector(vault, db_path):
    swept(vault, db_path)
    vault.remove("Lang.md")
    vault.write("Tee.md", "---\nai_processing: none\n---\n# Tee\n\nÜber Tee und Wasser.\n")
    run_import(db_path, vault.root)
    assert sweep(db_path).note_vectors["removed"] == 2
    conn = open_database(db_path)
    assert sorted(stored(conn)) == ["Geheim.md", "Kaffee.md"]
    assert conn.execute("SELECT count(*) FROM vec_notes").fetchone()[0] == 2
    assert conn.execute("SELECT count(*) FROM note_embeddings").fetchone()[0] == 2
    conn.close()


def over_code_indexes(conn) -> None:
    """The chunks' and the note vectors' code indexes built, and used whatever their size."""
    with conn:
        vector_codes.build(conn, FAKE)
        vector_codes.build(conn, FAKE, vector_codes.NOTES)
    ann.configure(conn, 1, 300, 0)


@pytest.mark.parametrize("indexed", [False, True])
def test_an_agent_never_gets_a_hidden_notes_vector_and_keeps_its_pool(vault, db_path, indexed):
    swept(vault, db_path)
    conn = open_database(db_path)
    if indexed:
        over_code_indexes(conn)
    hidden = note_id(conn, "Geheim.md")
    own = note_vector_store.note_vector(conn, hidden, FAKE)
    assert next(iter(note_vector_store.nearest_notes(conn, own, FAKE, 1))) == hidden  # the owner's nearest
    restrict(conn, Audience.AGENT)
    assert note_vector_store.note_vector(conn, hidden, FAKE) is None
    found = note_vector_store.nearest_notes(conn, own, FAKE, 1)
    assert len(found) == 1 and hidden not in found  # asked again past the hidden one
    assert hidden not in note_vector_store.nearest_notes(conn, own, FAKE, 10)
    assert conn.execute("SELECT count(*) FROM note_embeddings WHERE note_id = ?", (hidden,)).fetchone()[0] == 0
    conn.close()


def test_suggestions_ask_one_vector_query_and_score_as_before(vault, db_path):
    """Lang.md has 20 chunks: the former way asked 16 KNN queries. Every other note is a candidate
    here (k >= notes), so the scores must be the best cosine between any two chunks, exactly."""
    swept(vault, db_path)
    conn = open_database(db_path)
    lang = note_id(conn, "Lang.md")
    queries = []
    conn.exec_trace = lambda cursor, sql, bindings: queries.append(sql) or True
    found = similar_notes(conn, lang, FAKE, k=10)
    conn.exec_trace = None
    assert sum("MATCH" in sql for sql in queries) == 1
    vectors = graph_store.first_chunk_vectors(conn, [note_id(conn, p) for p in ("Lang.md", "Kaffee.md", "Tee.md",
                                                                              "Geheim.md")], FAKE)
    mine = np.frombuffer(b"".join(vectors.pop(lang)), dtype=np.float32).reshape(-1, 384)
    expected = {other: float(np.max(mine @ np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(-1, 384).T))
                for other, blobs in vectors.items()}
    assert found.keys() == expected.keys()
    for other, cosine in expected.items():
        assert abs(found[other] - cosine) < 1e-5
    conn.close()


def test_over_the_code_indexes_suggestions_scan_no_vector_table_and_score_as_the_exact_path(vault, db_path):
    """Above search.ann_min_vectors the note query scans the note vectors' codes, and the chunk
    vectors compared come from the chunks' float16 copies: the same notes, the same scores to
    float16 precision, and no vec0 table read but for the note's own vector (by rowid)."""
    swept(vault, db_path)
    conn = open_database(db_path)
    lang = note_id(conn, "Lang.md")
    own = note_vector_store.note_vector(conn, lang, FAKE)
    exact = similar_notes(conn, lang, FAKE, k=10)
    exact_nearest = [note_vector_store.nearest_notes(conn, own, FAKE, k) for k in (1, 2, 3)]
    over_code_indexes(conn)
    assert ann.index_for(conn, vector_codes.NOTES) is not None
    queries = []
    conn.exec_trace = lambda cursor, sql, bindings: queries.append(sql) or True
    found = similar_notes(conn, lang, FAKE, k=10)
    nearest = [note_vector_store.nearest_notes(conn, own, FAKE, k) for k in (1, 2, 3)]
    conn.exec_trace = None
    assert not any("MATCH" in sql or "vec_chunks" in sql for sql in queries)
    assert any("note_vector_halves" in sql for sql in queries)  # the note candidates ranked again
    for got, want in zip(nearest, exact_nearest):
        assert list(got) == list(want) and all(abs(got[n] - want[n]) < 2e-3 for n in want)
    assert found.keys() == exact.keys() and len(found) == 3
    for other, cosine in exact.items():
        assert abs(found[other] - cosine) < 2e-3
    conn.close()


def test_a_spent_budget_leaves_note_vectors_for_the_next_run(vault, db_path):
    write_vault(vault)
    run_import(db_path, vault.root)
    conn = open_database(db_path)
    run_embed_sweep(conn, DeterministicFakeEmbedder(), batch_size=4)
    with conn:
        conn.execute("DELETE FROM note_embeddings")
    assert note_vector_store.refresh_note_vectors(conn, FAKE, until=0.0) == {"computed": 0, "kept": 0, "removed": 0,
                                                                            "left": 1}
    assert note_vector_store.refresh_note_vectors(conn, FAKE)["computed"] == 4
    conn.close()


def test_the_note_vectors_code_index_has_its_own_rescore_and_prefilter(vault, db_path):
    """search.ann_note_rescore / ann_note_prefilter for the note vectors, the chunks' settings
    for chunks: at a million chunks the chunks' int4 prefilter kept 0.69-0.80 of the note vectors'
    exact top 50 (means of chunks crowd), every int8 code with 300 rescored 0.996. The nightly's
    recall sample leaves both as it found them."""
    swept(vault, db_path)
    conn = open_database(db_path)
    with conn:
        vector_codes.build(conn, FAKE)
        vector_codes.build(conn, FAKE, vector_codes.NOTES)
    search = load_settings(overrides={"search": {"ann_min_vectors": 1, "ann_rescore": 64, "ann_prefilter": 500,
                                                 "ann_note_rescore": 200, "ann_note_prefilter": 0}}).search
    vector_store.use_code_index(conn, search)
    notes_scan = vector_store.candidate_scan(conn, 10, vector_codes.NOTES)
    chunks_scan = vector_store.candidate_scan(conn, 10)
    assert (notes_scan.pool, notes_scan.prefilter) == (200, 0)
    assert (chunks_scan.pool, chunks_scan.prefilter) == (64, 500)
    vector_store.code_index_upkeep(conn, search, FAKE)  # samples the recall of both spaces
    assert ann.settings_of(conn).of(vector_codes.NOTES).rescore == 200 and ann.settings_of(conn).rescore == 64
    conn.close()
