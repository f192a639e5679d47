"""End to end with the real e5 model: an English query finds a German note and a German query an
English one, in the shipped (hybrid) search, where the query and the note share no word."""

from __future__ import annotations

import pytest

from mindtui.config import load_settings
from mindtui.models.sweep import run_embed_sweep
from mindtui.search.engine import SearchOptions, make_search_engine
from mindtui.store import open_database

from conftest import run_import

NOTES = {
    # German notes
    "Garten/Tomaten.md": "# Tomaten\n\nTomaten brauchen viel Sonne und regelmäßiges Gießen. Die Pflanzen werden "
                         "an Stäben festgebunden, damit die schweren Früchte nicht abknicken.\n",
    "Finanzen/Steuererklärung.md": "# Steuererklärung\n\nBelege für Arbeitsmittel sammle ich das ganze Jahr in einem "
                                   "Ordner. Im Frühjahr reiche ich alles beim Finanzamt ein.\n",
    "Küche/Brot backen.md": "# Brot backen\n\nSauerteig ansetzen, Mehl und Wasser mischen, über Nacht gehen lassen "
                            "und im heißen Ofen backen, bis die Kruste knusprig ist.\n",
    # English notes
    "Travel/Packing list.md": "# Packing list\n\nPassport, charger, toothbrush and a rain jacket: what goes into "
                              "the suitcase before every trip.\n",
    "Health/Running.md": "# Running\n\nThree easy jogs a week build endurance; a long slow run on Sunday, and "
                         "new shoes every 800 kilometres.\n",
    "Work/Meetings.md": "# Meetings\n\nEvery meeting needs an agenda sent the day before and written minutes "
                        "shared afterwards.\n",
}


@pytest.fixture
def engine(vault, tmp_path, e5_embedder, real_model):
    for path, text in NOTES.items():
        vault.write(path, text)
    db = tmp_path / "crosslingual.db"
    run_import(db, vault.root)
    conn = open_database(db)
    run_embed_sweep(conn, e5_embedder, batch_size=16)
    yield make_search_engine(conn, load_settings())
    conn.close()


@pytest.mark.parametrize("query, expected", [
    ("how do I grow tomato plants", "Garten/Tomaten.md"),           # English query, German note
    ("filing my tax return", "Finanzen/Steuererklärung.md"),
    ("baking sourdough bread", "Küche/Brot backen.md"),
    ("Was kommt vor der Reise in den Koffer?", "Travel/Packing list.md"),  # German query, English note
    ("Ausdauer durch Joggen verbessern", "Health/Running.md"),
    ("Tagesordnung und Protokoll einer Besprechung", "Work/Meetings.md"),
])
def test_a_query_finds_the_note_in_the_other_language_first(engine, query, expected):
    response = engine.search(query, SearchOptions(limit=3, log=False))
    assert not response.notices, response.notices
    assert response.results[0].path == expected, [r.path for r in response.results]
