"""Search: stemming both ways, escaping, fusion and protection, degradation, the search log."""

from __future__ import annotations

import json
import os

import apsw
import pytest
from fakes import DeterministicFakeEmbedder, KeywordEmbedder, ModelsFromCallables, unit_at_cosine
from hypothesis import given, settings
from hypothesis import strategies as st

from mindtui.config import load_settings
from mindtui.models.files import ModelUnavailableError
from mindtui.models.sweep import run_embed_sweep
from mindtui.search.engine import SearchEngine, SearchOptions
from mindtui.search.query import parse_query
from mindtui.store import vectors as vector_store

from conftest import result_paths as paths
from conftest import imported


@pytest.fixture
def stemming_vault(vault, db_path):
    vault.write("Notiz.md", "Eine Notiz hält einen Gedanken fest.\n")
    vault.write("Graph.md", "Zwei Karten sind verknüpft, wenn eine auf die andere zeigt.\n")
    vault.write("Links.md", "Obsidian links notes together with double brackets.\n")
    vault.write("Kuchen.md", "Der Kuchen braucht 40 Minuten im Ofen.\n")
    vault.write("RRF.md", "---\naliases: [Rank Fusion]\n---\nKombiniert Listen.\n")
    with imported(db_path, vault.root) as conn:
        yield conn


@pytest.mark.parametrize("query, expected", [
    ("Notizen", "Notiz.md"),              # German plural finds singular
    ("Verknüpfungen", "Graph.md"),        # noun finds participle
    ("verknüpfen", "Graph.md"),
    ("linking", "Links.md"),              # English -ing finds plural
    ("link", "Links.md"),
])
def test_stemming_at_index_and_query_time(stemming_vault, query, expected):
    engine = SearchEngine(stemming_vault, load_settings())
    response = engine.search(query, SearchOptions(mode="fts", log=False))
    assert paths(response)[:1] == [expected]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_any_text_is_a_valid_query(text):
    expression = parse_query(text).fts
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(title, headings, body)")  # chunks_fts's columns
    if expression is not None:
        conn.execute("SELECT * FROM t WHERE t MATCH ?", (expression,)).fetchall()


@pytest.mark.parametrize("query", ['"unbalanced', "a* OR", "NEAR(x y", "-minus", "col:value", "((]]", "AND", "*"])
def test_fts_syntax_in_queries_never_raises(stemming_vault, query):
    engine = SearchEngine(stemming_vault, load_settings())
    engine.search(query, SearchOptions(mode="hybrid", log=False))


def test_words_in_an_html_comment_find_nothing_and_show_in_no_snippet(vault, db_path):
    """As %%comments%%: a plugin template's hidden heading made every note of the template match."""
    vault.write("Plugin.md", "Ein Apfelbaum im Garten.\n\n<!--\n### Sponsor this author\n-->\n\nNoch mehr Apfelbaum.\n")
    vault.write("Anderes.md", "Sponsor gesucht.\n")
    with imported(db_path, vault.root) as conn:
        engine = SearchEngine(conn, load_settings())
        assert paths(engine.search("Sponsor author", SearchOptions(mode="fts", log=False))) == ["Anderes.md"]
        found = engine.search("Apfelbaum", SearchOptions(mode="fts", log=False)).results
        assert [r.path for r in found] == ["Plugin.md"] and "<!--" not in found[0].snippet
        assert found[0].snippet == "Ein Apfelbaum im Garten. Noch mehr Apfelbaum."


def test_a_snippet_shows_what_a_reader_sees_not_badges_urls_or_tags():
    from mindtui.search.snippets import snippet

    text = ("![GitHub all releases](https://img.shields.io/github/downloads/x/total?color=573E7A) ![[bild.png]]\n"
            "Entwickelt von <span class=\"who\">Emre</span><br>, siehe [Obsidian CLI](https://github.com/x/y) "
            "und [[Notiz|Alias]]. Im Code bleibt `<div>[a](b)</div>` stehen.")
    assert snippet(text, frozenset({"entwickelt"})) == (
        "Entwickelt von Emre , siehe Obsidian CLI und [[Notiz|Alias]]. Im Code bleibt `<div>[a](b)</div>` stehen.")


def test_a_query_of_stop_words_only_looks_in_names(vault, db_path):
    """'this', 'in', 'by is a' (what a query typed word by word starts with): in text such words
    are everywhere and rank every row by next to nothing; in a title they were written on purpose."""
    vault.write("This Week.md", "Termine und Aufgaben.\n")
    vault.write("Notes in Obsidian.md", "---\naliases: [In the vault]\n---\nAlles über Notizen.\n")
    vault.write("Essay.md", "This is what this note says, and this, and this again in this text.\n")
    with imported(db_path, vault.root) as conn:
        engine = SearchEngine(conn, load_settings())
        fts = SearchOptions(mode="fts", log=False)
        assert paths(engine.search("this", fts)) == ["This Week.md"]
        assert paths(engine.search("In ", fts)) == ["Notes in Obsidian.md"]  # its title and its alias
        assert paths(engine.search("this essay", fts)) == ["Essay.md"]  # a word of content: text as always
        assert engine.count("this", fts) == 1


def test_exact_alias_match_is_protected(stemming_vault):
    engine = SearchEngine(stemming_vault, load_settings())
    response = engine.search("rank fusion", SearchOptions(mode="fts", log=False))
    assert paths(response)[0] == "RRF.md" and response.results[0].explain["protected"]


def test_a_note_titled_as_the_query_comes_before_notes_with_it_as_an_alias(vault, db_path):
    # hub: `obsidian` put ten people with `aliases: [Obsidian]` before the note Obsidian.md.
    for n in range(6):
        vault.write(f"Personen/Bergsteiger {n}.md", f"---\naliases: [Zugspitze]\n---\nPerson {n}.\n")
    vault.write("Orte/Zugspitze.md", "Der höchste Berg Deutschlands.\n")
    with imported(db_path, vault.root) as conn:
        response = SearchEngine(conn, load_settings()).search("Zugspitze", SearchOptions(mode="fts", log=False))
    assert paths(response)[0] == "Orte/Zugspitze.md"
    assert all(r.explain.get("protected") for r in response.results[:7])


def test_a_full_text_search_finds_exact_titles_without_reading_every_title(stemming_vault):
    """The first full-text search of a session (the TUI's first keystroke) waited for every
    title and alias to be read into the mentions cache: exact matches come from the name index."""
    engine = SearchEngine(stemming_vault, load_settings())
    for query, expected in (("rank fusion", "RRF.md"), ("KUCHEN", "Kuchen.md")):
        response = engine.search(query, SearchOptions(mode="fts", log=False))
        assert paths(response)[0] == expected and response.results[0].explain["protected"]
    assert engine._title_cache is None  # nothing read every title
    response = engine.search("Kuchen Ofen", SearchOptions(mode="fts", log=False))
    assert "protected" not in response.results[0].explain  # a name inside a longer query is no exact match


def test_without_vectors_hybrid_degrades_to_full_text_with_a_notice(stemming_vault):
    engine = SearchEngine(stemming_vault, load_settings(), ModelsFromCallables(embedder=lambda: DeterministicFakeEmbedder()))
    response = engine.search("Notizen", SearchOptions(log=False))
    assert paths(response)[:1] == ["Notiz.md"]
    assert any("no vectors yet" in n for n in response.notices)


def test_broken_model_degrades_to_full_text_with_a_notice(stemming_vault):
    run_embed_sweep(stemming_vault, DeterministicFakeEmbedder(), batch_size=64)  # vectors to search

    def broken():
        raise ModelUnavailableError("cannot load the embedding model x.gguf: corrupt")

    engine = SearchEngine(stemming_vault, load_settings(), ModelsFromCallables(embedder=broken))
    response = engine.search("Kuchen", SearchOptions(log=False))
    assert paths(response) == ["Kuchen.md"] and "corrupt" in response.notices[0]


def test_rrf_fusion_pinned_by_hand(vault, db_path):
    """Three notes whose full-text and vector ranks are built into the test, fused by RRF k=60:
    Erster.md  BM25 rank 1 (three mentions), vector rank 3 (cosine 0.30) -> 1/61 + 1/63 = 0.0322664
    Zweiter.md BM25 rank 2 (one mention),    vector rank 2 (cosine 0.50) -> 1/62 + 1/62 = 0.0322581
    Dritter.md no BM25 hit,                  vector rank 1 (cosine 0.90) -> 1/61         = 0.0163934
    (No title is the query, so no exact-match protection; expansion is off.)
    """
    vault.write("Erster.md", "Obstgarten: Apfel, Apfel und noch ein Apfel.\n")
    vault.write("Zweiter.md", "Obstgarten: eine Birne neben einem Apfel.\n")
    vault.write("Dritter.md", "Obstgarten: eine Quitte, gelb und hart.\n")
    fake = KeywordEmbedder(unit_at_cosine(1.0), {"Quitte": unit_at_cosine(0.9), "Birne": unit_at_cosine(0.5),
                                                 "Apfel": unit_at_cosine(0.3)})
    with imported(db_path, vault.root) as conn:
        run_embed_sweep(conn, fake, batch_size=16)
        settings = load_settings(overrides={"search": {"fusion": "rrf", "rrf_k": 60, "graph_expansion": False}})
        response = SearchEngine(conn, settings, ModelsFromCallables(embedder=lambda: fake)).search(
            "Apfel", SearchOptions(log=False))
    assert paths(response) == ["Erster.md", "Zweiter.md", "Dritter.md"]
    explain = {r.path: r.explain for r in response.results}
    assert [(explain[p]["fts"]["rank"], explain[p]["vector"]["rank"]) for p in ("Erster.md", "Zweiter.md")] == [
        (1, 3), (2, 2)]
    assert "fts" not in explain["Dritter.md"] and explain["Dritter.md"]["vector"]["rank"] == 1
    assert explain["Zweiter.md"]["vector"]["cosine"] == pytest.approx(0.5, abs=1e-4)
    assert [explain[p]["fused"] for p in ("Erster.md", "Zweiter.md", "Dritter.md")] == pytest.approx(
        [0.0322664, 0.0322581, 0.0163934], abs=1e-6)
    assert [r.score for r in response.results] == pytest.approx([0.0322664, 0.0322581, 0.0163934], abs=1e-6)


def test_search_log_counts_pairs(stemming_vault):
    engine = SearchEngine(stemming_vault, load_settings())
    for _ in range(2):
        engine.search("Notiz Kuchen Obsidian", SearchOptions(mode="fts"))
    pairs = stemming_vault.execute("SELECT weight FROM search_pairs").fetchall()
    logged = stemming_vault.execute("SELECT results FROM search_log").fetchall()
    n = len(json.loads(logged[0][0]))
    assert len(logged) == 2 and n == 3
    assert sorted(pairs) == [(2,)] * (n * (n - 1) // 2)
    engine.search("Kuchen", SearchOptions(mode="fts", log=False))
    assert stemming_vault.execute("SELECT count(*) FROM search_log").fetchone()[0] == 2


def test_a_failing_log_never_fails_the_search(stemming_vault):
    stemming_vault.execute("DROP TABLE search_pairs")
    engine = SearchEngine(stemming_vault, load_settings())
    response = engine.search("Kuchen Notiz", SearchOptions(mode="fts"))
    assert len(response.results) == 2 and any("not logged" in n for n in response.notices)


def test_filters(stemming_vault):
    engine = SearchEngine(stemming_vault, load_settings())
    response = engine.search("Notiz Kuchen", SearchOptions(mode="fts", log=False, path="Kuch"))
    assert paths(response) == ["Kuchen.md"]


def test_rrf_and_convex_fusion_by_hand():
    from mindtui.search import fusion

    lists = {"fts": [("a", -9.0), ("b", -5.0), ("c", -1.0)], "vector": [("b", 0.9), ("d", 0.7), ("a", 0.5)]}
    rrf = fusion.rrf(lists, 60, {"fts": 1.0, "vector": 2.0})
    assert rrf["a"] == pytest.approx(1 / 61 + 2 / 63) and rrf["d"] == pytest.approx(2 / 62)
    convex = fusion.convex(lists, 0.5, "minmax")
    # fts: a best (1.0), b 0.5, c 0; vector: b 1.0, d 0.5, a 0
    assert convex == pytest.approx({"a": 0.5, "b": 0.75, "c": 0.0, "d": 0.25})
    assert fusion.convex({"fts": lists["fts"], "vector": []}, 0.5, "minmax") == pytest.approx(
        {"a": 1.0, "b": 0.5, "c": 0.0})
    assert fusion.convex({"fts": [("x", -3.0)]}, 0.5) == {"x": 1.0}
    with pytest.raises(ValueError, match="normalisation"):
        fusion.convex(lists, 0.5, "softmax")


def test_zscore_fusion_weighs_a_list_by_how_far_notes_stand_out():
    from statistics import pstdev

    from mindtui.search import fusion

    # BM25: a stands far out from a bulk of near-equal candidates. Vector: c wins by one step of
    # an even spread. Min-max gives both winners 1.0, so c (also in the BM25 bulk) wins; z-scores
    # measure each list in its own spread, so a's lead counts for more.
    others = [f"n{i}" for i in range(8)]
    fts = [("a", -10.0), ("c", -1.0)] + [(n, -1.0) for n in others[:7]] + [(others[7], 0.0)]
    vector = [("c", 0.90)] + [(n, 0.89 - 0.01 * i) for i, n in enumerate(others)] + [("a", 0.81)]
    fts_values = [-s for _, s in fts]
    vec_values = [s for _, s in vector]
    fts_sd, vec_sd = pstdev(fts_values), pstdev(vec_values)
    fused = fusion.convex({"fts": fts, "vector": vector}, 0.5)
    assert fused["a"] == pytest.approx(0.5 * 10.0 / fts_sd)
    assert fused["c"] == pytest.approx(0.5 * 1.0 / fts_sd + 0.5 * 0.09 / vec_sd)
    assert max(fused, key=fused.get) == "a"
    minmax = fusion.convex({"fts": fts, "vector": vector}, 0.5, "minmax")
    assert max(minmax, key=minmax.get) == "c"
    assert min(fused.values()) >= 0.0  # each list's worst candidate gets 0: type weights multiply safely


@pytest.mark.parametrize("setting, value, expected", [
    ("fusion", "borda", "one of convex, rrf"), ("convex_normalisation", "softmax", "one of zscore, minmax, zscore-pool"),
    ("convex_alpha", 1.5, "a value >= 0.0 and <= 1.0"), ("convex_alpha", "half", "a number"),
])
def test_a_misspelt_fusion_setting_is_a_clear_error(setting, value, expected):
    from mindtui.config import ConfigError

    with pytest.raises(ConfigError, match=f"search.{setting} is {value!r}; expected {expected}"):
        load_settings(env={}, overrides={"search": {setting: value}})


def test_a_misspelt_fusion_setting_exits_with_the_config_code(stemming_vault, db_path):
    import subprocess
    import sys

    env = {**os.environ, "MINDTUI_SEARCH__CONVEX_NORMALISATION": "softmax"}
    done = subprocess.run([sys.executable, "-m", "mindtui", "search", "Notiz", "--db", str(db_path), "--no-log"],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 5 and done.stdout == ""
    assert "search.convex_normalisation is 'softmax'; expected one of zscore, minmax, zscore-pool" in done.stderr


def test_a_short_full_text_list_is_measured_against_its_whole_pool():
    """zscore-pool: a rare word's one note stands as far out as one of a pool of 50 where the
    other 49 score BM25 0 (7 deviations), not 1.0; a full list is normalised as under zscore."""
    from mindtui.search import fusion

    vector = [(f"v{i}", 0.9 - 0.01 * i) for i in range(50)]
    lists = {"fts": [("rare", -4.0)], "vector": vector}
    assert fusion.convex(lists, 0.5, "zscore", pool=50)["rare"] == pytest.approx(0.5)
    pooled = fusion.convex(lists, 0.5, "zscore-pool", pool=50)
    assert pooled["rare"] == pytest.approx(0.5 * 50 / 7)  # v / sd of [v] + 49 zeros
    assert max(pooled, key=pooled.get) == "rare" and pooled["v0"] < pooled["rare"]
    full = {"fts": [(f"f{i}", -10.0 + 0.1 * i) for i in range(50)], "vector": vector}
    assert fusion.convex(full, 0.5, "zscore-pool", pool=50) == pytest.approx(fusion.convex(full, 0.5, "zscore"))


@pytest.mark.parametrize("method", ["zscore", "zscore-pool", "minmax"])
def test_a_note_without_a_vector_has_its_words_stand_in_for_it(method):
    from mindtui.search import fusion

    lists = {"fts": [("new", -9.0), ("old", -5.0), ("x", -1.0)], "vector": [("old", 0.9), ("y", 0.7), ("x", 0.5)]}
    plain = fusion.convex(lists, 0.5, method, pool=3)
    judged = fusion.convex(lists, 0.5, method, unjudged={"new"}, pool=3)
    assert judged["new"] == pytest.approx(2 * plain["new"])  # its full-text share counted for both
    assert {k: v for k, v in judged.items() if k != "new"} == pytest.approx(
        {k: v for k, v in plain.items() if k != "new"})
    rrf = fusion.rrf(lists, 60, {"fts": 1.0, "vector": 2.0}, unjudged={"new"})
    assert rrf["new"] == pytest.approx(1 / 61 + 2 / 61)


def test_convex_fusion_scales_name_mentions_by_the_longest():
    from mindtui.search import fusion

    lists = {"fts": [("a", -2.0), ("b", -1.0)], "title": [("c", 3.0), ("a", 1.0)]}
    assert fusion.convex(lists, 0.5, "minmax") == pytest.approx({"a": 0.5 + 0.5 / 3, "b": 0.0, "c": 0.5})
    # z-scores: a stands 2 standard deviations above b; a full name is worth half of that top score.
    assert fusion.convex(lists, 0.5) == pytest.approx({"a": 0.5 * 2 + 0.5 * 2 / 3, "b": 0.0, "c": 0.5 * 2})
    # alpha 0 (full text only) and no full-text hits: the vector list has no share, names still count.
    only_vector = {"vector": [("v", 0.9), ("w", 0.8)], "title": [("c", 3.0)]}
    assert fusion.convex(only_vector, 0.0) == pytest.approx({"v": 0.0, "w": 0.0, "c": 0.5 * 2})


def test_unfiltered_and_filtered_full_text_paths_rank_alike(stemming_vault):
    from mindtui.store.search_store import fts_chunks

    expression = parse_query("Notiz Kuchen Obsidian Listen Gedanken").fts
    fast = fts_chunks(stemming_vault, expression, 50)
    joined = fts_chunks(stemming_vault, expression, 50, note_type="note")  # every note here is a "note"
    assert len(fast) >= 4
    assert [(h.chunk_id, h.note_id) for h in fast] == [(h.chunk_id, h.note_id) for h in joined]
    assert [h.score for h in fast] == pytest.approx([h.score for h in joined])


@pytest.mark.parametrize("ann_min_vectors", [10**9, 10])  # the exact scan; the code index
def test_a_narrow_filter_keeps_its_vector_pool(vault, db_path, ann_min_vectors):
    """A type filter matching 0.5 % of the notes goes into the vector query (candidate ids), so the
    vector list holds every matching note, as an unfiltered list holds its pool (issue 3.2), over
    the exact scan or the code index."""
    for i in range(400):
        vault.write(f"Alltag/N{i:03d}.md", f"Notiz {i} über den Alltag und anderes.\n")
    vault.write("Selten/A.md", "---\ntype: selten\n---\nEine seltene Notiz über Kometen.\n")
    vault.write("Selten/B.md", "---\ntype: selten\n---\nNoch eine seltene Notiz über Meteore.\n")
    fake = DeterministicFakeEmbedder()
    settings = load_settings(overrides={"search": {"min_cosine": -1.0, "candidate_pool": 2,
                                                   "graph_expansion": False, "ann_min_vectors": ann_min_vectors}})
    with imported(db_path, vault.root) as conn:
        run_embed_sweep(conn, fake, batch_size=64)
        vector_store.code_index_upkeep(conn, settings.search, fake.model_id)
        engine = SearchEngine(conn, settings, ModelsFromCallables(embedder=lambda: fake))
        unfiltered = engine.search("Sterne am Himmel", SearchOptions(mode="vector", log=False, limit=2))
        filtered = engine.search("Sterne am Himmel", SearchOptions(mode="vector", log=False, limit=2,
                                                                   note_type="selten"))
    assert len(unfiltered.results) == 2  # the pool
    assert sorted(paths(filtered)) == ["Selten/A.md", "Selten/B.md"]  # 2 of 402 notes, both found


def test_the_match_count_counts_notes_not_chunks(vault, db_path):
    """Three matching sections of one note are one match, with anchor text or without (an agent)."""
    from mindtui.store.search_store import fts_note_count

    section = "Komet. " + " ".join(f"Wort{i}" for i in range(300))  # past a chunk's budget: a chunk each
    vault.write("Lang.md", f"# Eins\n\n{section}\n\n# Zwei\n\n{section}\n\n# Drei\n\n{section}\n")
    vault.write("Kurz.md", "Ein Komet.\n")
    with imported(db_path, vault.root) as conn:
        expression = parse_query("Komet").fts
        assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] >= 4
        assert fts_note_count(conn, expression, anchors=True) == fts_note_count(conn, expression, anchors=False) == 2
