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


@pytest.mark.parametrize("query, expected", [
    ("Wie viele Zettel hatte Luhmann?", {"Konzepte/Zettelkasten.md", "Personen/Niklas Luhmann.md"}),
    ("how fast do we forget what we learned", {"Konzepte/Vergessenskurve.md", "Konzepte/Spaced Repetition.md"}),
    ("Formel zum Kombinieren von Rankings", {"Konzepte/Reciprocal Rank Fusion.md"}),
    ("welches Präfix braucht e5 für Anfragen", {"Konzepte/Embeddings.md"}),
    ("RRF", {"Konzepte/Reciprocal Rank Fusion.md"}),                                      # alias, protected
])
def test_hybrid_finds_the_answer_in_the_top_3(engine, query, expected):
    response = engine.search(query, SearchOptions(limit=3, log=False))
    assert not response.notices, response.notices
    assert expected & {r.path for r in response.results}, [r.path for r in response.results]


def test_vector_mode_crosses_languages(engine):
    response = engine.search("spaced repetition intervals", SearchOptions(mode="vector", limit=3, log=False))
    assert "Konzepte/Spaced Repetition.md" in {r.path for r in response.results}
