"""The service façade: what every front end gets from it, the owner-only actions, cancellation,
retention, model changes, and the CLI's behaviour at a closed pipe."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys

import numpy as np
import pytest
from fakes import DeterministicFakeEmbedder

from mindtui.audience import Audience
from mindtui.config import load_settings
from mindtui.errors import ModelUnavailableError, NotAllowed
from mindtui.models.holder import LOADER_THREAD, ModelHolder
from mindtui.models.sweep import DimensionMismatch, run_embed_sweep
from mindtui.progress import CancelToken
from mindtui.service import InputError, SearchOptions, Service
from mindtui.store import jobs as job_store
from mindtui.store import open_database
from mindtui.store.jobs import MAX_STORED_WARNINGS

from conftest import embed_with_fake, run_import


@pytest.fixture
def fake_models():
    fake = DeterministicFakeEmbedder()
    return ModelHolder(embedder_factory=lambda settings, say: fake), fake


@pytest.fixture
def service(sample_vault, db_path, fake_models):
    holder, _ = fake_models
    settings = load_settings().with_overrides(db=str(db_path))
    with Service(settings, audience=Audience.OWNER, models=holder) as service:
        assert service.run_job("nightly", vault=sample_vault.root).ok
        yield service


def test_status_note_and_models(service):
    status = service.status()
    assert status["notes_total"] > 40 and status["embedding"]["coverage"] == 1.0
    assert {m["role"]: m["status"] for m in status["models"]} == {"embedding": "ready", "reranker": "unavailable"}
    assert [r["step"] for r in status["recent_runs"][:6]] == ["maintain", "gaps", "consolidate", "graph", "embed", "import"]
    note = service.note("Zettelkasten", with_chunks=True)
    assert note.path == "Konzepte/Zettelkasten.md" and note.text_source == "file" and note.chunks
    assert note.text.startswith("---") or note.text.startswith("#")
    assert service.models_status()["models"][0]["role"] == "embedding"


def test_a_note_without_its_chunks_does_not_read_them_unless_its_file_is_gone(service, sample_vault, monkeypatch):
    from mindtui.service import core

    read = []
    chunks_of = core.note_store.note_chunks
    monkeypatch.setattr(core.note_store, "note_chunks",
                        lambda conn, note_id: read.append(note_id) or chunks_of(conn, note_id))
    whole = service.note("Zettelkasten", with_chunks=False)
    assert whole.chunks == [] and whole.text_source == "file" and not read  # a 5 MB note has 10,000
    (sample_vault.root / whole.path).unlink()
    fallback = service.note("Zettelkasten", with_chunks=False)
    assert fallback.text_source == "index" and read and "Zettelkasten" in fallback.text  # made of the chunks


def test_a_changed_file_is_shown_as_changed(service, sample_vault):
    path = sample_vault.root / "Konzepte" / "BM25.md"
    path.write_text(path.read_text(encoding="utf-8") + "\nNeu geschrieben.\n", encoding="utf-8")
    note = service.note("Konzepte/BM25.md")
    assert note.text_source == "file-changed" and note.text.endswith("Neu geschrieben.\n")


def test_unknown_signal_is_an_input_error(service):
    with pytest.raises(InputError, match="unknown signal"):
        service.neighbours("Zettelkasten", ("links_out", "gossip"))


def test_jobs_and_model_builds_are_for_the_owner(service, fake_models):
    agent = Service(service.settings, audience=Audience.AGENT, models=fake_models[0])
    try:
        with pytest.raises(NotAllowed, match="running jobs is for the owner"):
            agent.run_job("nightly")
        with pytest.raises(NotAllowed):
            agent.build_model()
        assert agent.search("Zettelkasten", SearchOptions(log=False)).results  # reading is fine
    finally:
        agent.close()


def test_the_default_audience_is_the_restrictive_one(service, fake_models):
    with Service(service.settings, models=fake_models[0]) as unnamed:
        assert unnamed.audience is Audience.AGENT
        assert "Privat/Gehaltsgespräch 2027.md" not in {
            r.path for r in unnamed.search("Gehaltsgespräch", SearchOptions(log=False)).results}


def test_a_search_before_the_model_is_ready_answers_from_full_text(sample_vault, db_path):
    """wait_for_model=False: full-text results now with a notice; the model loads in the background."""
    import threading

    release = threading.Event()
    fake = DeterministicFakeEmbedder()

    def slow_factory(settings, say):
        release.wait(30)
        return fake

    holder = ModelHolder(embedder_factory=slow_factory)
    run_import(db_path, sample_vault.root)
    conn = open_database(db_path)
    run_embed_sweep(conn, fake, batch_size=16)
    conn.close()
    # every cosine counts: the hash-seeded fake's vectors are near-orthogonal
    settings = load_settings().with_values({"db": str(db_path), "search": {"min_cosine": -1.0}})
    with Service(settings, audience=Audience.OWNER, models=holder) as service:
        early = service.search("Zettelkasten", SearchOptions(log=False, wait_for_model=False))
        assert early.results and any("loading" in n for n in early.notices)
        assert not any("vector" in r.explain for r in early.results)
        assert service.status()["models"][0]["status"] == "loading"
        release.set()
        late = service.search("Zettelkasten", SearchOptions(log=False))  # waits for the load
        assert not late.notices and any("vector" in r.explain for r in late.results)


def test_a_broken_model_is_tried_once_and_reported(sample_vault, db_path):
    calls = []

    def broken(settings, say):
        calls.append(1)
        raise ModelUnavailableError("cannot load the embedding model x.gguf: corrupt")

    settings = load_settings().with_overrides(db=str(db_path))
    run_import(db_path, sample_vault.root)
    embed_with_fake(db_path)
    with Service(settings, audience=Audience.OWNER, models=ModelHolder(embedder_factory=broken)) as service:
        for _ in range(3):
            response = service.search("Zettelkasten", SearchOptions(log=False))
            assert response.results and "corrupt" in response.notices[0]
        assert len(calls) == 1
        assert service.status()["models"][0] == {"role": "embedding", "status": "unavailable",
                                                 "reason": "cannot load the embedding model x.gguf: corrupt"}


def test_a_cancelled_job_stops_at_a_safe_point_and_is_recorded(sample_vault, db_path, fake_models):
    holder, _ = fake_models
    token = CancelToken()
    seen = []

    def progress(step, done, total, detail):
        seen.append((step, done))
        if step == "import" and done >= 5:
            token.cancel()

    settings = load_settings().with_overrides(db=str(db_path))
    with Service(settings, audience=Audience.OWNER, models=holder) as service:
        result = service.run_job("nightly", vault=sample_vault.root, progress=progress, cancel=token)
        assert [(s.step, s.status) for s in result.steps] == [("import", "cancelled")] and result.cancelled
        assert service.status()["notes_total"] == 5  # stopped before the sixth note; the five done are kept
        again = service.run_job("nightly", vault=sample_vault.root)
        assert again.ok and service.status()["notes_total"] > 40
    conn = open_database(db_path)
    statuses = [r.status for r in reversed(job_store.recent_runs(conn))]
    conn.close()
    assert statuses[0] == "cancelled" and statuses[1:] == ["ok"] * 6


def test_retention_forgets_old_searches_and_job_runs(service, sample_vault):
    conn = open_database(service.db_path)
    old = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=400)).isoformat(timespec="seconds")
    with conn:
        conn.execute("INSERT INTO search_log (searched_at, query, mode, results) VALUES (?, 'alt', 'hybrid', '[]')",
                     (old,))
        conn.execute("INSERT INTO job_runs (batch_id, job, step, status, started_at) VALUES ('x', 'nightly', "
                     "'import', 'ok', ?)", (old,))
    service.search("Zettelkasten")  # a fresh one stays
    result = service.run_job("nightly", vault=sample_vault.root)
    assert {s.step: s.report for s in result.steps}["graph"]["searches_forgotten"] == 1
    assert conn.execute("SELECT count(*) FROM search_log WHERE query = 'alt'").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM search_log").fetchone()[0] >= 1
    assert conn.execute("SELECT count(*) FROM job_runs WHERE batch_id = 'x'").fetchone()[0] == 0
    conn.close()


def test_stored_reports_keep_200_warnings_and_the_count(vault, db_path, fake_models):
    for n in range(MAX_STORED_WARNINGS + 30):
        vault.write(f"kaputt {n}.md", "---\ntitle: [unclosed\n---\nText.\n")
    settings = load_settings().with_overrides(db=str(db_path))
    with Service(settings, audience=Audience.OWNER, models=fake_models[0]) as service:
        result = service.run_job("index", steps=["import"], vault=vault.root)
    assert len(result.steps[0].report["warnings"]) == MAX_STORED_WARNINGS + 30  # the caller gets all of them
    conn = open_database(db_path)
    (stored,) = conn.execute("SELECT report FROM job_runs").fetchone()
    conn.close()
    report = json.loads(stored)
    assert len(report["warnings"]) == MAX_STORED_WARNINGS and report["warnings_total"] == MAX_STORED_WARNINGS + 30


class WideEmbedder(DeterministicFakeEmbedder):
    """A fake model of another dimension (768)."""

    def __init__(self):
        super().__init__(model_id="fake-768", dim=768)


def test_a_model_of_another_dimension_is_refused_and_the_old_vectors_stay(service):
    conn = open_database(service.db_path)
    before = conn.execute("SELECT count(*), min(model_id) FROM embeddings").fetchone()
    assert before[0] > 100
    with pytest.raises(DimensionMismatch, match="768-d vectors; this store holds 384-d"):
        run_embed_sweep(conn, WideEmbedder(), batch_size=16)
    assert conn.execute("SELECT count(*), min(model_id) FROM embeddings").fetchone() == before
    assert conn.execute("SELECT count(*) FROM vec_chunks").fetchone()[0] == before[0]
    other = DeterministicFakeEmbedder(model_id="fake-other")  # same dimension: replaces the old vectors
    report = run_embed_sweep(conn, other, batch_size=16)
    assert report.removed == before[0] and conn.execute(
        "SELECT count(*), min(model_id), max(model_id) FROM embeddings").fetchone() == (before[0], "fake-other",
                                                                                       "fake-other")
    conn.close()
    assert np.isfinite(other.embed_query("x")).all()


def test_a_closed_pipe_ends_quietly(sample_vault, db_path):
    run_import(db_path, sample_vault.root)
    done = subprocess.run(f"{sys.executable} -m mindtui search Zettelkasten --mode fts --no-log --limit 40 "
                          f"--db '{db_path}' --explain | head -1", shell=True, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and done.stdout.strip().startswith("1.")
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr


def test_closing_the_last_service_frees_the_model_and_a_late_load_is_not_kept(sample_vault, db_path):
    import threading

    closed, release = [], threading.Event()

    class ClosableFake(DeterministicFakeEmbedder):
        def close(self):
            closed.append(self)

    def slow(settings, say):
        release.wait(30)
        return ClosableFake()

    holder = ModelHolder(embedder_factory=slow)
    run_import(db_path, sample_vault.root)
    embed_with_fake(db_path)
    settings = load_settings().with_overrides(db=str(db_path))
    service = Service(settings, audience=Audience.OWNER, models=holder)
    service.preload_models()  # the load starts in the background...
    (loader,) = [t for t in threading.enumerate() if t.name == LOADER_THREAD]
    service.close()  # ...and the last user leaves before it ends
    release.set()
    loader.join(30)
    assert len(closed) == 1 and holder.states(settings)[0].status == "not loaded"
    with Service(settings, audience=Audience.OWNER, models=ModelHolder(
            embedder_factory=lambda s, say: ClosableFake())) as again:
        again.search("Zettelkasten", SearchOptions(log=False))
        models = again.models
    assert len(closed) == 2 and models.states(settings)[0].status == "not loaded"
