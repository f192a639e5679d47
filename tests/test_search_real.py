"""End to end with the real e5 model on the sample vault: hybrid search finds the answering note.

Single queries that must work; the golden-set bar is in test_eval.py.
"""

from __future__ import annotations

import pytest

from mindtui.config import load_settings
from mindtui.search.engine import SearchOptions, make_search_engine
from mindtui.store import open_database


@pytest.fixture
def engine(embedded_sample_db, real_model):
    conn = open_database(embedded_sample_db)
    yield make_search_engine(conn, load_settings())
    conn.close()


@pytest.mark.parametrize("query, expected, within", [
    ("Wie viele Zettel hatte Luhmann?", {"Konzepte/Zettelkasten.md", "Personen/Niklas Luhmann.md"}, 3),
    ("how fast do we forget what we learned", {"Konzepte/Vergessenskurve.md", "Konzepte/Spaced Repetition.md"}, 3),
    # A paraphrase both lists rank middling (fts 4, vector 7): the three notes that use the
    # formula come first. RRF put it 3rd; convex fusion, better on every evaluation set, 4th.
    ("Formel zum Kombinieren von Rankings", {"Konzepte/Reciprocal Rank Fusion.md"}, 5),
    ("welches Präfix braucht e5 für Anfragen", {"Konzepte/Embeddings.md"}, 3),
    ("RRF", {"Konzepte/Reciprocal Rank Fusion.md"}, 1),                                   # alias, protected
])
def test_hybrid_finds_the_answer_near_the_top(engine, query, expected, within):
    response = engine.search(query, SearchOptions(limit=within, log=False))
    assert not response.notices, response.notices
    assert expected & {r.path for r in response.results}, [r.path for r in response.results]


def test_vector_mode_crosses_languages(engine):
    response = engine.search("spaced repetition intervals", SearchOptions(mode="vector", limit=3, log=False))
    assert "Konzepte/Spaced Repetition.md" in {r.path for r in response.results}


@pytest.mark.parametrize("query, only_note", [
    ("Tantivy", "Konzepte/BM25.md"),            # the only note with the word (it came 10th)
    ("Sennrich", "Konzepte/Tokenisierung.md"),  # (2nd, below a note without it)
])
def test_a_rare_words_only_note_comes_first(engine, query, only_note):
    response = engine.search(query, SearchOptions(limit=5, log=False))
    assert [r.path for r in response.results][:1] == [only_note]


def test_a_note_imported_but_not_embedded_is_found_by_its_words(embedded_sample_db, real_model, tmp_path):
    """Its rare word found it 48th of 61 in the default (hybrid) search, with no notice."""
    import shutil

    from mindtui.vault.importer import VaultImporter
    from mindtui.vault.types import load_type_registry

    from conftest import SAMPLE_VAULT

    db, vault = tmp_path / "copy.db", tmp_path / "vault"
    shutil.copy(embedded_sample_db, db)
    shutil.copytree(SAMPLE_VAULT, vault)
    (vault / "Inbox" / "Kaffeemaschine.md").write_text(
        "# Kaffeemaschine\n\nDie Siebträgermaschine braucht neue Dichtungen, Modell Rancilio Silvia.\n",
        encoding="utf-8")
    settings = load_settings()
    conn = open_database(db)
    try:
        VaultImporter(conn, vault, load_type_registry(settings.types_file), settings).run()
        response = make_search_engine(conn, settings).search("Rancilio", SearchOptions(limit=5, log=False))
    finally:
        conn.close()
    assert response.results[0].path == "Inbox/Kaffeemaschine.md"
    assert response.results[0].explain.get("not_embedded") is True
    assert any("1 of the notes found by their words have no vector yet" in n for n in response.notices)
