"""The later search stages: graph expansion, filters on protected matches, the title cache, reranking."""

from __future__ import annotations

import pytest
from fakes import DeterministicFakeEmbedder, ModelsFromCallables

from mindtui.config import load_settings
from mindtui.models.files import ModelUnavailableError
from mindtui.models.reranker import Reranker
from mindtui.search.engine import SearchEngine, SearchOptions
from mindtui.search.query import parse_query
from mindtui.text.names import passage_text

from conftest import result_paths as paths
from conftest import imported, run_import


@pytest.fixture
def linked_vault(vault, db_path):
    # The link stands on its own line: the line a link sits in is the target's anchor text, and
    # "Mehl Zucker" must reach Ofen.md only through the graph.
    vault.write("Kochen/Kuchen.md", "Der Kuchen braucht Mehl, Zucker und 40 Minuten im Ofen.\n\nSiehe [[Ofen]].\n")
    vault.write("Kochen/Ofen.md", "Umluft oder Ober- und Unterhitze.\n")
    vault.write("Kochen/Brot.md", "Brot backt man lange bei hoher Hitze.\n")
    for n in range(4):
        vault.write(f"Themen/Hub{n}.md", "Kuchen Kuchen Kuchen.\n")
    vault.write("Themen/Backen.md", "Alles zum Backen: [[Kuchen]] [[Brot]] [[Hub0]] [[Hub1]] [[Hub2]] [[Hub3]]\n")
    vault.write("Werkstatt.md", "---\naliases: [Backofen]\ntype: project\n---\nDie Werkstatt hat einen Backofen.\n")
    with imported(db_path, vault.root) as conn:
        yield conn


def test_expansion_adds_a_linked_note_that_no_retriever_found(linked_vault):
    engine = SearchEngine(linked_vault, load_settings())
    plain = engine.search("Mehl Zucker", SearchOptions(mode="fts", log=False, expand=False))
    expanded = engine.search("Mehl Zucker", SearchOptions(mode="fts", log=False, expand=True))
    assert paths(plain) == ["Kochen/Kuchen.md"]
    assert paths(expanded)[0] == "Kochen/Kuchen.md" and "Kochen/Ofen.md" in paths(expanded)
    ofen = next(r for r in expanded.results if r.path == "Kochen/Ofen.md")
    kuchen = expanded.results[0]
    assert ofen.explain["graph"]["from"] == [kuchen.note_id]
    # The linked note gains the factor (0.2) times its lender's score, through an explicit edge (1.0).
    assert ofen.score == pytest.approx(0.2 * kuchen.score, rel=1e-3)
    assert ofen.snippet.startswith("Umluft")  # its best chunk is shown even though no retriever matched it


def test_a_full_text_search_lists_only_notes_holding_the_words_unless_asked_to_expand(linked_vault):
    """`--mode fts` and the TUI's list as you type: a linked note holding none of the words is no
    full-text hit (it was added by the graph expansion the setting turns on for hybrid search)."""
    engine = SearchEngine(linked_vault, load_settings())
    assert paths(engine.search("Mehl Zucker", SearchOptions(mode="fts", log=False))) == ["Kochen/Kuchen.md"]
    assert "Kochen/Ofen.md" in paths(engine.search("Mehl Zucker", SearchOptions(mode="fts", log=False, expand=True)))


def test_expansion_counts_the_strongest_lender_not_the_sum(linked_vault):
    """Backen.md is linked from nothing but links to all the Kuchen notes: it must not outrank them."""
    engine = SearchEngine(linked_vault, load_settings())
    response = engine.search("Kuchen", SearchOptions(mode="fts", log=False, expand=True, limit=20))
    backen = next(r for r in response.results if r.path == "Themen/Backen.md")
    lenders = [r for r in response.results if r.note_id in backen.explain["graph"]["from"]]
    assert len(lenders) >= 2
    assert backen.explain["graph"]["gain"] == pytest.approx(0.2 * max(r.explain["weighted"] for r in lenders),
                                                            rel=1e-3)
    assert backen.score < min(r.score for r in lenders)  # the sum of five lenders would put it above the hubs


def test_expansion_respects_filters(linked_vault):
    engine = SearchEngine(linked_vault, load_settings())
    response = engine.search("Mehl Zucker", SearchOptions(mode="fts", log=False, expand=True, path="Kochen/Kuchen"))
    assert paths(response) == ["Kochen/Kuchen.md"]


def test_protected_match_respects_filters(linked_vault):
    engine = SearchEngine(linked_vault, load_settings())
    assert paths(engine.search("Backofen", SearchOptions(mode="fts", log=False)))[0] == "Werkstatt.md"
    filtered = engine.search("Backofen", SearchOptions(mode="fts", log=False, path="Kochen/"))
    assert "Werkstatt.md" not in paths(filtered)


def test_title_cache_sees_notes_imported_by_another_connection(linked_vault, vault, db_path):
    engine = SearchEngine(linked_vault, load_settings())
    assert not any("protected" in r.explain for r in engine.search("Sauerteig", SearchOptions(log=False)).results)
    vault.write("Rezepte/Sauerteig.md", "Roggen und Wasser, drei Tage.\n")
    run_import(db_path, vault.root)
    response = engine.search("Sauerteig", SearchOptions(mode="fts", log=False))
    assert paths(response)[0] == "Rezepte/Sauerteig.md" and response.results[0].explain["protected"]


class FailingReranker:
    def score(self, query, passages):
        raise ModelUnavailableError("reranker decode failed")


def test_failing_reranker_keeps_the_fused_order_with_a_notice(linked_vault):
    engine = SearchEngine(linked_vault, load_settings(), ModelsFromCallables(reranker=lambda: FailingReranker()))
    fused = engine.search("Kuchen Ofen", SearchOptions(mode="fts", log=False, rerank=False))
    response = engine.search("Kuchen Ofen", SearchOptions(mode="fts", log=False))
    assert paths(response) == paths(fused) and any("reranker failed" in n for n in response.notices)


def test_configured_reranker_reorders_the_head(linked_vault, rank_gguf):
    """A real rank GGUF (random head): the order follows its scores, and automatic lookups skip it."""
    settings = load_settings()
    reranker = Reranker(rank_gguf, 2)
    engine = SearchEngine(linked_vault, settings, ModelsFromCallables(embedder=lambda: DeterministicFakeEmbedder(),
                                                                      reranker=lambda: reranker))
    response = engine.search("Kuchen Ofen Hitze", SearchOptions(mode="fts", log=False, limit=20))
    reranked = [r for r in response.results if "rerank" in r.explain]
    assert len(reranked) >= 3
    assert [r.explain["rerank"]["rank"] for r in reranked] == list(range(1, len(reranked) + 1))
    scores = [r.explain["rerank"]["score"] for r in reranked]
    assert scores == sorted(scores, reverse=True)
    # The scores are the reranker's own for (query, the best chunk's passage text).
    texts = linked_vault.execute("SELECT chunk_id, heading_path, text FROM chunks").fetchall()
    by_chunk = {cid: (heading, text) for cid, heading, text in texts}
    first = reranked[0]
    expected = reranker.score("Kuchen Ofen Hitze", [passage_text(first.title, *by_chunk[first.chunk_id])])[0]
    assert first.explain["rerank"]["score"] == pytest.approx(expected, abs=1e-3)
    automatic = engine.search("Kuchen Ofen Hitze", SearchOptions(mode="fts", log=False, limit=20, rerank=False))
    assert not any("rerank" in r.explain for r in automatic.results)


def test_names_mentioned_in_a_longer_query_form_their_own_list(linked_vault, vault, db_path):
    vault.write("Themen/Ober- und Unterhitze.md", "Klassisch.\n")
    run_import(db_path, vault.root)
    engine = SearchEngine(linked_vault, load_settings())
    hits = engine._mentions(parse_query("welche Temperatur für Kuchen mit ober und unterhitze im Ofen"), SearchOptions())
    titles = {h.note_id: h.score for h in hits}
    paths_by_id = dict(linked_vault.execute("SELECT note_id, path FROM notes").fetchall())
    named = [paths_by_id[h.note_id] for h in hits]
    # the three-word name first; "Ofen" has under 5 letters and is not taken alone
    assert named == ["Themen/Ober- und Unterhitze.md", "Kochen/Kuchen.md"] and max(titles.values()) == 3.0
    response = engine.search("Kuchen mit ober und unterhitze", SearchOptions(log=False, expand=False))
    top = next(r for r in response.results if r.path == "Themen/Ober- und Unterhitze.md")
    assert top.explain["title"]["rank"] == 1
    assert engine._mentions(parse_query("Kuchen"), SearchOptions()) == []  # one word is the exact-match case


class ExplodingEmbedder:
    model_id = "fake-hash-embedder"

    def embed_query(self, text):
        raise RuntimeError("llama_decode returned -1")


def test_a_crashing_embedder_degrades_to_full_text(linked_vault):
    fake = DeterministicFakeEmbedder()
    from mindtui.models.sweep import run_embed_sweep
    run_embed_sweep(linked_vault, fake, batch_size=16)
    engine = SearchEngine(linked_vault, load_settings(), ModelsFromCallables(embedder=lambda: ExplodingEmbedder()))
    response = engine.search("Kuchen", SearchOptions(log=False))
    assert paths(response)[0] == "Kochen/Kuchen.md"
    assert any("vector search failed (RuntimeError" in n for n in response.notices)


def test_a_query_without_words_asks_no_vectors_and_logs_nothing(linked_vault):
    asked = []

    def provider():
        asked.append(1)
        return DeterministicFakeEmbedder()

    engine = SearchEngine(linked_vault, load_settings(), ModelsFromCallables(embedder=provider))
    assert engine.search("?? !!", SearchOptions()).results == [] and not asked
    assert linked_vault.execute("SELECT count(*) FROM search_log").fetchone()[0] == 0


def test_path_filter_is_a_case_sensitive_literal_prefix(linked_vault):
    engine = SearchEngine(linked_vault, load_settings())
    assert paths(engine.search("Kuchen", SearchOptions(mode="fts", log=False, path="kochen/"))) == []
    assert paths(engine.search("Kuchen", SearchOptions(mode="fts", log=False, path="Kochen/")))[0] == "Kochen/Kuchen.md"
    assert paths(engine.search("Kuchen", SearchOptions(mode="fts", log=False, path="K_chen/"))) == []


class BackwardsReranker:
    def score(self, query, passages):
        return [float(-i) for i in range(len(passages))][::-1]  # reverses whatever it is given


def test_reranking_never_pushes_an_exact_title_match_down(linked_vault):
    """"Kuchen" is the title of Kochen/Kuchen.md and a word of five other notes: a reranker that reverses
    whatever it is shown reverses those five, while the exact title match stays first and is never scored."""
    engine = SearchEngine(linked_vault, load_settings(), ModelsFromCallables(reranker=lambda: BackwardsReranker()))
    fused = engine.search("Kuchen", SearchOptions(mode="fts", log=False, expand=False, rerank=False))
    response = engine.search("Kuchen", SearchOptions(mode="fts", log=False, expand=False))
    assert paths(fused)[0] == "Kochen/Kuchen.md" and fused.results[0].explain["protected"]
    assert set(paths(fused)[1:]) == {"Themen/Hub0.md", "Themen/Hub1.md", "Themen/Hub2.md", "Themen/Hub3.md",
                                     "Themen/Backen.md"}
    assert paths(response) == paths(fused)[:1] + paths(fused)[1:][::-1]
    assert "rerank" not in response.results[0].explain
    assert [r.explain["rerank"]["rank"] for r in response.results[1:]] == [1, 2, 3, 4, 5]


def test_the_query_is_analysed_once_per_search(linked_vault, monkeypatch):
    """One ParsedQuery per search: the full-text lists of notes and items, the name mentions, the
    exact match, the snippets and the items' word coverage all read it (they once split the text
    into words each on their own, with two different word limits)."""
    from mindtui.search import query as query_module
    from mindtui.text import analysis

    split: list[str] = []
    words = analysis.words
    monkeypatch.setattr(analysis, "words", lambda text: split.append(text) or words(text))
    text = "Kuchen mit Ober- und Unterhitze im Ofen"
    response = SearchEngine(linked_vault, load_settings()).search(text, SearchOptions(log=False))  # notes and items
    assert response.results and split.count(text) == 1

    # One word limit: words past it reach neither the full-text expression nor the name mentions.
    limit = query_module.MAX_QUERY_WORDS
    parsed = parse_query(" ".join(["Mehl"] * limit + ["Werkstatt"]))
    assert len(parsed.words) == limit and "werkstatt" not in parsed.fts
    engine = SearchEngine(linked_vault, load_settings())
    named = [engine._mentions(parse_query(" ".join(["Mehl"] * filler + ["Werkstatt"])), SearchOptions())
             for filler in (limit - 1, limit)]
    assert [len(hits) for hits in named] == [1, 0]
