"""The TUI teaches usage memory: Enter on a result, `y` on the note opened so, and a link followed
out of it are recorded as opens of that search; the explain panel then says why a note is lifted."""

from __future__ import annotations

import pytest
from tui_support import build_fixed_db, owner_service, pilot_app, settle

from mindtui.store import open_database
from mindtui.tui.note_screen import NoteScreen
from mindtui.tui.search_screen import SearchScreen

QUERY = "Vergessenskurve Ebbinghaus"


@pytest.fixture
def service(sample_vault, db_path):
    build_fixed_db(sample_vault.root, db_path)
    with owner_service(db_path) as service:
        yield service


def opens(db_path) -> list[tuple[str, str, int | None, str]]:
    conn = open_database(db_path, readonly=True)
    try:
        return conn.execute("SELECT s.query, n.title, o.rank, o.how FROM search_opens o"
                            " JOIN search_log s ON s.search_id = o.search_id JOIN notes n ON n.note_id = o.note_id"
                            " ORDER BY o.open_id").fetchall()
    finally:
        conn.close()


async def test_enter_copy_and_a_followed_link_are_opens_of_the_search(service):
    app = pilot_app(service)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press(*QUERY)
        await settle(pilot)
        first = app.screen.results[0].title
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, NoteScreen) and screen.note.title == first
        await pilot.press("y")
        await settle(pilot)
        tree = screen.query_one("#neighbours")
        tree.focus()
        while tree.cursor_node is None or tree.cursor_node.data is None:
            await pilot.press("down")
        await pilot.press("enter")
        await settle(pilot)
        followed = screen.note.title
        assert followed != first
        await pilot.press("y")  # the followed note is not the search's result: its copy is not counted
        await settle(pilot)
        recorded = opens(service.db_path)
        assert recorded[:2] == [(QUERY, first, 1, "enter"), (QUERY, first, 1, "copy")]
        assert [(q, title, how) for q, title, _, how in recorded[2:]] == [(QUERY, followed, "follow")]

        app.action_mode("search")
        await settle(pilot)
        search = app.screen
        assert isinstance(search, SearchScreen)
        search.search_now()  # the same query again: the note opened after it says why it is lifted
        await settle(pilot)
        await pilot.press("ctrl+r")
        await settle(pilot)
        panel = str(search.query_one("#explain").render())
        assert f"opened after a similar search: '{QUERY}' (2×, today)" in panel.replace("\n", " ")


async def test_a_past_query_with_brackets_is_shown_as_typed_in_the_explain_panel(service):
    """A past query is user text like a note's (tui/literal.py): `[/x]` in it raised a MarkupError
    in the explain panel, `[@click=app.quit]` made a link that ran an action."""
    from mindtui.service import SearchOptions

    past = "Vergessenskurve [/x] [@click=app.quit]Ebbinghaus"
    shown = [r.log_key for r in service.search(past, SearchOptions(log=False)).results]
    service.record_open(past, "hybrid", shown, shown[0], "enter")
    app = pilot_app(service)
    async with app.run_test(size=(160, 30)) as pilot:
        await pilot.press(*QUERY)
        await settle(pilot)
        await pilot.press("ctrl+r")
        await settle(pilot)
        panel = app.screen.query_one("#explain")
        assert f"opened after a similar search: '{past}'" in str(panel.render()).replace("\n", " ")
