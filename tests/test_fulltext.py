"""The lean full-text search (service.fulltext) that answers the TUI before the service is open:
cheap to import, the service's own fts answers, and the app using it while the service's import
is still under way (issue 23: a query typed at the first paint waited for the whole stack)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest
from tui_support import build_fixed_db, owner_service, settle

from mindtui.config import load_settings
from mindtui.errors import DatabaseError
from mindtui.service import SearchOptions
from mindtui.service.fulltext import FullText

HEAVY = ("numpy", "sqlite_vec", "markdown_it", "mindtui.service.core", "mindtui.graph", "mindtui.vault.importer",
         "mindtui.jobs")
QUERIES = [
    ("Zettelkasten", {}), ("spaced repetition", {}), ("Vergessenskurve Ebbinghaus", {}), ("BM25", {}),
    ("notiz", {"note_type": "article"}), ("tag", {"tag": "daily"}), ("lernen", {"path": "Konzepte/"}),
    ("chunking", {"kind": "notes"}), ("reranking", {"kind": "knowledge"}), ("embeddings", {"limit": 3}),
    ("zzzz nothing matches", {}), ("???", {}),
]


@pytest.fixture
def fixed_db(sample_vault, db_path):
    build_fixed_db(sample_vault.root, db_path)
    return db_path


def test_importing_and_searching_with_it_pulls_in_neither_numpy_nor_the_service_stack(fixed_db):
    code = (
        "import json, sys\n"
        "from mindtui.config import load_settings\n"
        "from mindtui.service import SearchOptions\n"
        "from mindtui.service.fulltext import FullText\n"
        f"lean = FullText(load_settings().with_overrides(db={str(fixed_db)!r}))\n"
        "found = lean.search('Zettelkasten', SearchOptions(mode='fts', limit=5))\n"
        "count = lean.search_count('Zettelkasten', SearchOptions(mode='fts'))\n"
        f"heavy = sorted({{m.split('.')[0] if m.startswith(('numpy', 'sqlite_vec', 'markdown_it')) else m"
        f" for m in sys.modules if m.startswith({HEAVY!r})}})\n"
        "print(json.dumps([len(found.results), count, heavy]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    results, count, heavy = json.loads(done.stdout)
    assert results > 0 and count >= results
    assert heavy == []


@pytest.mark.parametrize("query, options", QUERIES)
def test_its_answers_are_the_services_fts_answers_for_the_owner(fixed_db, query, options):
    settings = load_settings().with_overrides(db=str(fixed_db))
    lean = FullText(settings)
    try:
        with owner_service(fixed_db) as service:
            wanted = SearchOptions(mode="fts", log=False, wait_for_model=False, **{"limit": 20, **options})
            expected = service.search(query, wanted)
            answered = lean.search(query, SearchOptions(mode="fts", log=False, wait_for_model=False,
                                                        **{"limit": 20, **options}))
            assert answered.as_dict() == expected.as_dict()
            assert lean.search_count(query, wanted) == service.search_count(query, wanted)
    finally:
        lean.close()
    if query == "Zettelkasten":
        assert expected.results  # the comparison compared something


def test_a_database_it_cannot_read_is_a_database_error(tmp_path):
    lean = FullText(load_settings().with_overrides(db=str(tmp_path / "none.db")))
    with pytest.raises(DatabaseError):
        lean.search("anything", SearchOptions(mode="fts"))
    assert not (tmp_path / "none.db").exists()  # read-only: nothing created


async def test_the_app_answers_a_query_before_its_service_is_open(fixed_db, monkeypatch):
    """The service's import held back (as on a loaded machine): the query typed at once gets the
    service's full-text answer all the same; the service opens afterwards and takes over."""
    from mindtui.tui.app import make_app
    from mindtui.tui.early_search import EarlySearch

    release = threading.Event()
    prepare = EarlySearch.prepare

    def held_prepare(self) -> None:
        prepare(self)
        assert release.wait(60), "the test never let the service open"

    monkeypatch.setattr(EarlySearch, "prepare", held_prepare)
    settings = load_settings().with_overrides(db=str(fixed_db))
    with owner_service(fixed_db) as reference:
        expected = [r.title for r in reference.search("Zettelkasten", SearchOptions(mode="fts", limit=20)).results]
        # Once open, the service's hybrid answer (no model here: full text, names and the graph) follows.
        then = [r.title for r in reference.search("Zettelkasten", SearchOptions(mode="hybrid", limit=20,
                                                                                wait_for_model=False)).results]
    app = make_app(settings, load_model=False, poll_status=False, debounce_s=0, watch_vault=False)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            screen = app.screen
            await pilot.press(*"Zettelkasten")
            deadline = time.monotonic() + 60
            while not (screen.shown == (screen.generation, "fts") and screen.results):
                assert time.monotonic() < deadline, "no full-text answer while the service was held back"
                await pilot.pause(0.01)
            assert not app._service_ready.is_set()
            assert [r.title for r in screen.results] == expected
            release.set()
            await settle(pilot)
            assert app._service_ready.is_set() and app.early_search._full_text is None  # closed: the service answers
            await pilot.press("ctrl+u", *"Zettelkasten")
            await settle(pilot)
            assert [r.title for r in screen.results] == then and screen.shown[1] == "hybrid"
    finally:
        release.set()
