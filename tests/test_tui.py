"""Pilot tests of the TUI: keys in, screen state and database out. The database is the sample
vault imported without vectors (no model); the real-model case is in test_tui_real.py."""

from __future__ import annotations

import threading

import pytest
from tui_support import build_fixed_db, owner_service, pilot_app, settle, until

from mindtui.service import SearchOptions
from mindtui.store import open_database
from mindtui.tui.confirm_writes import ConfirmWrites
from mindtui.tui.help_screen import HelpScreen
from mindtui.tui.note_screen import NoteScreen
from mindtui.tui.picker import PickerScreen
from mindtui.tui.search_screen import SearchScreen


@pytest.fixture
def fixed_db(sample_vault, db_path):
    build_fixed_db(sample_vault.root, db_path)
    return db_path


@pytest.fixture
def service(fixed_db):
    with owner_service(fixed_db) as service:
        yield service


tui = pilot_app


def logged_searches(db_path) -> list[str]:
    conn = open_database(db_path)
    try:
        return [row[0] for row in conn.execute("SELECT query FROM search_log ORDER BY search_id")]
    finally:
        conn.close()


async def test_opens_in_search_mode_with_the_query_focused_and_q_quits_with_0(service):
    app = tui(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, SearchScreen)
        assert app.focused.id == "query"
        assert f"{service.status()['notes_total']} notes" in app.status_text and "cards" in app.status_text and "model not loaded" in app.status_text
        await pilot.press("escape")  # Esc on an empty query does nothing...
        await pilot.press("down")  # ...nor does Down without results: the query keeps focus
        assert app.focused.id == "query"
        await pilot.press("tab", "q")  # q outside the query field quits
    assert app.return_code == 0


async def test_a_query_shows_the_expected_note_first_and_opening_it_logs_the_search(service, fixed_db):
    app = tui(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*"Vergessenskurve Ebbinghaus")
        await settle(pilot)
        screen = app.screen
        assert screen.results[0].title == "Vergessenskurve"
        assert screen.shown == (screen.generation, "hybrid")  # the hybrid answer replaced the full-text one
        assert "full-text results only" in " ".join(screen.notices)  # degradation is said, not hidden
        assert screen.results[0].highlights  # the query's words are marked in the snippet
        assert logged_searches(fixed_db) == []  # typing does not teach the search graph
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, NoteScreen)
        assert app.screen.note.title == "Vergessenskurve"
    assert logged_searches(fixed_db) == ["Vergessenskurve Ebbinghaus"]


async def test_enter_before_the_first_answer_opens_its_first_result_when_it_comes(service, monkeypatch):
    """Typed and pressed Enter faster than the search answered (a slow machine, a fast typist):
    the first result opens as soon as the answer is there, instead of the key being lost."""
    answered = threading.Event()
    search = service.search

    def slow_search(query, options=None, **kwargs):
        answered.wait(10)
        return search(query, options, **kwargs)

    monkeypatch.setattr(service, "search", slow_search)
    app = tui(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*"Vergessenskurve", "enter")
        await pilot.pause()
        assert isinstance(app.screen, SearchScreen) and app.screen.results == []  # no answer yet
        answered.set()
        await settle(pilot)
        assert isinstance(app.screen, NoteScreen)
        assert app.screen.note.title == "Vergessenskurve"


async def test_a_newer_query_wins_over_an_older_answer(service):
    app = tui(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*"Zettelkasten")
        await settle(pilot)
        screen = app.screen
        old_generation = screen.generation
        first = [r.title for r in screen.results]
        await pilot.press("ctrl+u", *"Spaced Repetition")
        await settle(pilot)
        # A late answer for the old query arrives after the new one: it is dropped.
        stale = service.search("Zettelkasten", SearchOptions(**screen._options("hybrid")))
        screen.post_message(SearchScreen.Answer(old_generation, "hybrid", "Zettelkasten", stale))
        await settle(pilot)
        assert screen.results[0].title == "Spaced Repetition"
        assert [r.title for r in screen.results] != first


async def test_filters_narrow_the_results_and_esc_leaves_the_filter_first(service):
    app = tui(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*"Zettelkasten")
        await settle(pilot)
        assert {r.note_type for r in app.screen.results} - {"person"}  # other types without a filter
        await pilot.press("ctrl+f", *"person")
        await settle(pilot)
        assert app.focused.id == "filter-type"
        assert app.screen.results and {r.note_type for r in app.screen.results} == {"person"}
        await pilot.press("escape")
        assert app.focused.id == "query" and app.screen.query_text == "Zettelkasten"
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen.query_text == "" and app.screen.results == []


async def test_a_filter_left_on_behind_the_hidden_filter_row_is_shown_on_the_notice_line(service):
    app = tui(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*"Zettelkasten", "ctrl+f", *"person")
        await settle(pilot)
        notice = lambda: str(app.screen.query_one("#notice").render())  # noqa: E731
        assert "filtered" not in notice()  # the row is open: the filter is in sight
        await pilot.press("ctrl+f")  # the row hides; the filter still narrows every result
        await settle(pilot)
        assert "filtered: type person (ctrl+f)" in notice()
        assert {r.note_type for r in app.screen.results} == {"person"}
        await pilot.press("ctrl+u", *"Xylokorbwort")
        await settle(pilot)
        assert notice().startswith("no results · filtered: type person (ctrl+f)")


async def test_the_explain_panel_shows_each_lists_rank(service):
    app = tui(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*"BM25", "ctrl+r")
        await settle(pilot)
        text = str(app.screen.query_one("#explain").render())
        selected = app.screen.selected()  # the panel explains the highlighted result, with its own ranks
        assert f"full text rank {selected.explain['fts']['rank']}" in text and "fusion" in text


async def test_note_mode_chunks_links_history_and_copy(service):
    app = tui(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*"Zettelkasten", "enter")
        await settle(pilot)
        screen = app.screen
        assert screen.note.title == "Zettelkasten" and len(screen.note.chunks) > 1
        groups = screen.neighbours.groups
        assert groups["links_out"] and groups["backlinks"]
        await pilot.press("n")
        assert screen.chunk_index == 0
        await pilot.press("n")
        assert screen.chunk_index == 1
        assert f"chunk 2/{len(screen.note.chunks)}" in str(screen.query_one("#note-header").render())
        await pilot.press("p", "p")
        assert screen.chunk_index == 0
        await pilot.press("y")
        assert app.clipboard == "[[Zettelkasten]]"
        await pilot.press("l")
        await settle(pilot)
        assert isinstance(app.screen, PickerScreen)
        labels = [c.value for c in app.screen.choices]
        target = "Niklas Luhmann"
        assert target in labels
        for _ in range(labels.index(target)):
            await pilot.press("down")
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is screen and screen.note.title == "Niklas Luhmann"
        await pilot.press("left_square_bracket")
        await settle(pilot)
        assert screen.note.title == "Zettelkasten"
        await pilot.press("right_square_bracket")
        await settle(pilot)
        assert screen.note.title == "Niklas Luhmann"


async def test_a_neighbour_opens_by_keyboard(service):
    app = tui(service)
    async with app.run_test(size=(80, 24)) as pilot:
        app.open_note("Zettelkasten")
        await settle(pilot)
        screen = app.screen
        tree = screen.query_one("#neighbours")
        tree.focus()
        while tree.cursor_node is None or tree.cursor_node.data is None:
            await pilot.press("down")  # past the group label to its first entry
        node = tree.cursor_node
        await pilot.press("enter")
        await settle(pilot)
        assert screen.note.note_id == node.data[1].note_id


async def test_help_lists_every_binding_and_modes_switch_by_key(service):
    app = tui(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("tab", "question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = app.screen.text
        for binding in SearchScreen.BINDINGS:
            assert binding.description in text
        assert "Quit" in text and "ctrl+p" in text
        await pilot.press("escape", "f3")
        await settle(pilot)
        assert app.current_mode == "note"
        await pilot.press("f5")
        await settle(pilot)
        assert app.current_mode == "jobs"
        await pilot.press("1")
        assert app.current_mode == "search"


async def test_a_failing_worker_is_a_notification_and_the_app_stays_usable(service, monkeypatch):
    app = tui(service)
    real_search = service.search
    calls = []

    def broken_once(query, options=None, **kwargs):
        calls.append(query)
        if len(calls) == 1:
            raise RuntimeError("disk on fire")
        return real_search(query, options, **kwargs)

    monkeypatch.setattr(service, "search", broken_once)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("B")
        await settle(pilot)
        assert any("disk on fire" in n.message for n in app._notifications)
        await pilot.press(*"M25")
        await settle(pilot)
        assert app.screen.results[0].title == "BM25"


async def test_a_curation_card_resolved_by_keyboard_changes_database_and_file_and_undo_restores_both(
        service, sample_vault):
    cards = service.curation_list(kind="unresolved_link")
    assert cards, "the sample vault has links to missing notes"
    card = cards[0]
    source = sample_vault.root / card.payload["source_path"]
    before = source.read_bytes()
    app = tui(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("tab", "3")
        await settle(pilot)
        screen = app.screen
        assert screen.cards[0].importance >= screen.cards[-1].importance  # most important first
        while screen.selected().item_id != card.item_id:
            await pilot.press("down")
        await pilot.press("r")  # retarget: a search picker opens
        await settle(pilot)
        picker = app.screen
        await pilot.press("ctrl+u", *"Zettelkasten")
        await settle(pilot)
        assert picker.results and picker.results[0].title == "Zettelkasten"
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmWrites)  # the rewrite of the source note, as a diff
        assert [w.path for w in app.screen.writes] == [card.payload["source_path"]]
        await pilot.press("y")
        await settle(pilot)
        assert app.screen is screen
        assert service.curation_card(card.item_id).status == "resolved"
        after = source.read_text(encoding="utf-8")
        assert after.encode() != before and "[[Zettelkasten" in after
        assert card.item_id not in [c.item_id for c in screen.cards]
        await pilot.press("u")
        await settle(pilot)
        assert source.read_bytes() == before
        assert service.curation_card(card.item_id).status == "open"
        assert card.item_id in [c.item_id for c in screen.cards]


async def test_jobs_mode_runs_a_step_in_a_child_process_and_shows_it_in_the_history(service):
    app = tui(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("tab", "4")
        await settle(pilot)
        screen = app.screen
        runs_before = len(screen.runs)
        await pilot.press("g")  # the graph step
        await until(pilot, lambda: len(screen.runs) == runs_before + 1)  # the child ended, the history reloaded
        assert "graph: ok" in str(screen.query_one("#job-state").render())
        row = [r for r in screen.query(".step-row")]
        assert [r.step for r in row] == ["graph"]
        assert "ok" in str(row[0].query_one(".step-counts").render())
        assert len(screen.runs) == runs_before + 1 and screen.runs[0]["job"] == "graph"
        assert screen.runs[0]["status"] == "ok"
        assert "graph: ok" in str(screen.query_one("#job-report").render())
