"""A hybrid search embeds its query (and scans the code index) while its full-text query runs:
the same answer as embedding on demand, and a failing or slow embedder still leaves full text."""

from __future__ import annotations

import threading

import pytest
from fakes import DeterministicFakeEmbedder, ModelsFromCallables

from mindtui.config import load_settings
from mindtui.models.sweep import run_embed_sweep
from mindtui.search import engine as engine_module
from mindtui.search.engine import SearchEngine, SearchOptions
from mindtui.search.query_vector import EMBEDDING_THREAD, NO_VECTORS_NOTICE
from mindtui.store import search_store
from mindtui.store import vectors as vector_store

from conftest import imported

WAIT_S = 30  # a bound on waiting for the other thread, never reached when the search works

QUERIES = ["Kometen am Himmel", "Sterne", "der Himmel über dem Garten", "Notiz", "Kometen Sterne Garten Notiz"]


@pytest.fixture
def sky(vault, db_path):
    for i in range(40):
        topic = ("Kometen", "Sterne", "Garten", "Himmel")[i % 4]
        vault.write(f"Himmel/N{i:02d}.md", f"# {topic} {i}\n\nNotiz {i} über {topic} und den Himmel am Abend.\n")
    vault.write("Kometen.md", "---\naliases: [Schweifsterne]\n---\nKometen ziehen einen Schweif.\n")
    with imported(db_path, vault.root) as conn:
        yield conn


def _settings(ann_min_vectors: int):
    return load_settings(overrides={"search": {"min_cosine": -1.0, "ann_min_vectors": ann_min_vectors}})


@pytest.mark.parametrize("ann_min_vectors", [10**9, 10])  # the exact scan; the code index, scanned ahead
@pytest.mark.parametrize("kind", [None, "notes"])
def test_the_early_embedding_gives_the_answer_of_the_embedding_on_demand(sky, ann_min_vectors, kind):
    fake = DeterministicFakeEmbedder()
    settings = _settings(ann_min_vectors)
    run_embed_sweep(sky, fake, batch_size=64)
    vector_store.code_index_upkeep(sky, settings.search, fake.model_id)
    early = SearchEngine(sky, settings, ModelsFromCallables(embedder=lambda: fake))
    on_demand = SearchEngine(sky, settings, ModelsFromCallables(embedder=lambda: fake))
    on_demand.embed_early = False
    for query in QUERIES:
        options = SearchOptions(mode="hybrid", log=False, limit=10, kind=kind, rerank=False)
        got, expected = early.search(query, options), on_demand.search(query, options)
        assert [r.as_dict() for r in got.results] == [r.as_dict() for r in expected.results]
        assert got.notices == expected.notices
        assert any("vector" in r.explain for r in got.results)


class _EmbedderThatWaitsForTheFullText(DeterministicFakeEmbedder):
    """Embeds only once the full-text query has run: a search that embedded first (or after it)
    would wait for the other forever (bounded by WAIT_S)."""

    def __init__(self) -> None:
        super().__init__()
        self.started, self.fts_done = threading.Event(), threading.Event()
        self.threads: list[str] = []

    def embed_query(self, text):
        self.threads.append(threading.current_thread().name)
        self.started.set()
        assert self.fts_done.wait(WAIT_S), "the full-text query did not run while the query was embedded"
        return super().embed_query(text)


def test_the_full_text_query_runs_while_the_query_is_embedded(sky, monkeypatch):
    fake = _EmbedderThatWaitsForTheFullText()
    settings = _settings(10)
    run_embed_sweep(sky, fake, batch_size=64)
    vector_store.code_index_upkeep(sky, settings.search, fake.model_id)
    overlapped: list[bool] = []
    fts_chunks = search_store.fts_chunks

    def fts_while_embedding(*args, **kwargs):
        overlapped.append(fake.started.wait(WAIT_S))  # the embedding began before the full text
        hits = fts_chunks(*args, **kwargs)
        fake.fts_done.set()
        return hits

    monkeypatch.setattr(search_store, "fts_chunks", fts_while_embedding)
    engine = SearchEngine(sky, settings, ModelsFromCallables(embedder=lambda: fake))
    response = engine.search("Kometen am Himmel", SearchOptions(mode="hybrid", log=False, rerank=False))
    assert overlapped == [True]
    assert fake.threads == [EMBEDDING_THREAD]  # the connection stayed on the search's thread
    assert {"fts", "vector"} <= {name for r in response.results for name in r.explain}
    assert response.notices == []


def test_an_embedder_failing_in_its_thread_leaves_full_text_results_and_a_notice(sky):
    fake = DeterministicFakeEmbedder()
    run_embed_sweep(sky, fake, batch_size=64)

    class Failing(DeterministicFakeEmbedder):
        def embed_query(self, text):
            raise RuntimeError("llama_decode returned -3")

    engine = SearchEngine(sky, _settings(10**9), ModelsFromCallables(embedder=lambda: Failing()))
    response = engine.search("Kometen am Himmel", SearchOptions(mode="hybrid", log=False, rerank=False))
    assert response.results and all("vector" not in r.explain for r in response.results)
    assert "fts" in response.results[0].explain
    assert response.notices == ["vector search failed (RuntimeError: llama_decode returned -3); full-text results only"]


def test_a_loading_model_is_not_waited_for_by_an_early_embedding(sky):
    """wait_for_model=False while the model loads: the full-text answer now, with its notice."""
    run_embed_sweep(sky, DeterministicFakeEmbedder(), batch_size=64)

    class Loading:
        def embedder(self, wait):
            assert wait is False
            return None

        def reranker(self):
            return None

    engine = SearchEngine(sky, _settings(10**9), Loading())
    response = engine.search("Kometen", SearchOptions(mode="hybrid", log=False, wait_for_model=False))
    assert response.results
    assert response.notices == ["the embedding model is loading; full-text results for now"]


def test_a_store_without_vectors_never_loads_the_model(sky, db_path):
    """Nothing embedded yet: the full-text answer and the notice, without the seconds a model
    load takes per CLI search; once vectors exist (of any model) the model is asked for."""
    asked = []

    def embedder():
        asked.append(1)
        return DeterministicFakeEmbedder()

    engine = SearchEngine(sky, _settings(10**9), ModelsFromCallables(embedder=embedder))
    response = engine.search("Kometen", SearchOptions(mode="hybrid", log=False, rerank=False))
    assert response.results and all("vector" not in r.explain for r in response.results)
    assert response.notices == [NO_VECTORS_NOTICE] and asked == []
    run_embed_sweep(sky, DeterministicFakeEmbedder(), batch_size=64)
    response = engine.search("Kometen", SearchOptions(mode="hybrid", log=False, rerank=False))
    assert asked and any("vector" in r.explain for r in response.results)
    assert NO_VECTORS_NOTICE not in response.notices


def test_full_text_mode_never_starts_an_embedding(sky, monkeypatch):
    started = []
    monkeypatch.setattr(engine_module.QueryVector, "start", lambda self, scan_for: started.append(1))
    engine = SearchEngine(sky, _settings(10**9), ModelsFromCallables(embedder=lambda: DeterministicFakeEmbedder()))
    assert engine.search("Kometen", SearchOptions(mode="fts", log=False)).results
    assert engine.search("Kometen", SearchOptions(mode="hybrid", log=False, kind="knowledge")).results == []
    assert started == []
