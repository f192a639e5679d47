"""Browsing a long result list: the total match count, more results as the cursor reaches the
end (no wrap-around), g/G and Home/End; keys that arrive together all reach their target."""

from __future__ import annotations

import pytest
from textual import events
from tui_support import fixed_service, pilot_app, settle

from mindtui.service import SearchOptions

NOTES = 65  # more than three pages of 20 and more than search.candidate_pool (50)


@pytest.fixture
def service(vault, db_path):
    for n in range(NOTES):
        vault.write(f"Plugins/Plugin {n:02d}.md", f"# Plugin {n:02d}\n\nA plugin for the vault, number {n}.\n")
    vault.write("Other.md", "# Other\n\nNothing about extensions here.\n")
    with fixed_service(vault.root, db_path) as service:
        yield service


def notice(app) -> str:
    return str(app.screen.query_one("#notice").render())


def test_the_count_is_every_note_the_words_match(service):
    options = SearchOptions(mode="fts", limit=1000, kind="notes", log=False)
    assert service.search_count("plugin", options) == NOTES
    assert len(service.search("plugin", options).results) == NOTES  # a long list reaches every one
    assert service.search_count("plugin", SearchOptions(path="Plugins/Plugin 1", kind="notes")) == 10
    assert service.search_count("extensions", options) == 1


async def test_the_list_shows_the_total_and_loads_more_at_its_end_without_wrapping(service):
    app = pilot_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*"plugin")
        await settle(pilot)
        screen = app.screen
        assert len(screen.results) == 20 and notice(app).startswith(f"20 of {NOTES}")
        results = screen.query_one("#results")
        await pilot.press("down")
        assert app.focused is results and results.highlighted == 0
        await pilot.press("end")  # the last row: the next page loads
        await settle(pilot)
        assert len(screen.results) == 40 and results.highlighted == 19
        assert notice(app).startswith(f"40 of {NOTES}")
        await pilot.press("down")
        assert results.highlighted == 20
        for _ in range(3):
            await pilot.press("G")
            await settle(pilot)
        assert len(screen.results) == NOTES and results.highlighted == NOTES - 1
        assert len({r.note_id for r in screen.results}) == NOTES
        await pilot.press("down")  # the end: no wrap-around to the first row
        assert results.highlighted == NOTES - 1
        await pilot.press("g")
        assert results.highlighted == 0
        await pilot.press("up")  # above the first row: back in the query
        assert app.focused.id == "query"
        await pilot.press("down", "home")
        assert results.highlighted == 0


async def test_back_in_the_query_the_next_letters_extend_it(service):
    """Up above the first row, or Esc from the list, puts the cursor after the query: a word
    typed then refines it (the whole query was selected, and the first letter replaced it)."""
    app = pilot_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*"plugin")
        await settle(pilot)
        await pilot.press("down", "up", *" x")
        await settle(pilot)
        assert app.focused.id == "query" and app.screen.query_text == "plugin x"
        await pilot.press("down", "escape", "y")
        await settle(pilot)
        assert app.focused.id == "query" and app.screen.query_text == "plugin xy"


def one_read(app, *keys: str) -> None:
    """Keys as a terminal read delivers them: all posted before the app handles the first (the
    Pilot's press waits after each key, which hides what a fast typist or a paste does)."""
    for key in keys:
        character = key if len(key) == 1 else None
        app.post_message(events.Key(key, character))


async def test_three_downs_in_one_read_move_three_times(service):
    app = pilot_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*"plugin")
        await settle(pilot)
        one_read(app, "down", "down", "down")  # the first moves the focus into the list
        await settle(pilot)
        results = app.screen.query_one("#results")
        assert app.focused is results and results.highlighted == 2
        assert app.screen.query_text == "plugin"


async def test_text_in_the_same_read_as_ctrl_u_is_typed_after_the_clearing(service):
    app = pilot_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*"plugin")
        await settle(pilot)
        one_read(app, "ctrl+u", *"other")
        await settle(pilot)
        assert app.screen.query_text == "other"
        assert [r.title for r in app.screen.results] == ["Other"]


def test_the_count_stops_past_its_cap(service):
    options = SearchOptions(mode="fts", kind="notes", log=False)
    assert service.search_count("plugin", options, at_most=10) == 11  # "more than 10"
    assert service.search_count("plugin", options, at_most=NOTES) == NOTES
    assert service.search_count("plugin", SearchOptions(path="Plugins/Plugin 1", kind="notes"), at_most=5) == 6


async def test_results_show_before_the_count_and_a_capped_count_says_so(service, monkeypatch):
    import threading

    import mindtui.tui.search_screen as search_screen

    monkeypatch.setattr(search_screen, "COUNT_AT_MOST", 30)
    release = threading.Event()
    counted = service.search_count

    def slow_count(*args, **kwargs):
        release.wait(timeout=30)  # the count of a word in most of a million chunks
        return counted(*args, **kwargs)

    monkeypatch.setattr(service, "search_count", slow_count)
    app = pilot_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*"plugin")
        for _ in range(2000):  # the results come while the count still runs
            if app.screen.results:
                break
            await pilot.pause(0.01)
        assert app.screen.results and not notice(app).startswith("20 of")
        release.set()
        await settle(pilot)
        assert notice(app).startswith("20 of 30+"), notice(app)
