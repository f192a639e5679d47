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
