"""Every key where the help says it works: the app's keys from the Search mode's query field,
single characters typed there; ctrl+p lists and runs every action of every mode; the README's
key table is the one the bindings give."""

from __future__ import annotations

from pathlib import Path

import pytest
from tui_support import fixed_service, pilot_app, settle, until

from mindtui.service import curation_kind_actions
from mindtui.tui.app import MindtuiApp
from mindtui.tui.help_screen import EVERYWHERE, NO_FIELD, HelpScreen, keys_markdown
from mindtui.tui.jobs_screen import JobsScreen
from mindtui.tui.picker import PickerScreen

README = Path(__file__).resolve().parent.parent / "README.md"


@pytest.fixture
def service(sample_vault, db_path):
    with fixed_service(sample_vault.root, db_path) as service:
        yield service


def test_the_readme_key_table_is_the_one_the_bindings_give():
    text = README.read_text(encoding="utf-8")
    table = text.split("<!-- keys:begin -->\n", 1)[1].split("\n<!-- keys:end -->", 1)[0]
    expected = keys_markdown(MindtuiApp, MindtuiApp.MODES)
    assert table == expected, f"regenerate with `python -m mindtui.tui.help_screen`:\n{expected}"


async def test_app_keys_work_from_the_query_field_and_single_characters_are_typed_there(service):
    app = pilot_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.focused.id == "query"
        await pilot.press("q", "question_mark", "1")  # typed: no quit, no help, no mode switch
        await settle(pilot)
        assert app.screen.query_text == "q?1" and app.current_mode == "search"
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        text = app.screen.text
        everywhere, no_field = text.split(EVERYWHERE)[1].split(NO_FIELD)
        assert "ctrl+q" in everywhere and "f3, alt+2" in everywhere and "ctrl+p" in everywhere
        assert "  q " in no_field and "  ? " in no_field and "  1 " in no_field and "ctrl" not in no_field
        await pilot.press("escape", "f3")
        await settle(pilot)
        assert app.current_mode == "note"
        await pilot.press("alt+1")
        await settle(pilot)
        assert app.current_mode == "search" and app.focused.id == "query"
        await pilot.press("alt+4")  # from the query field: the mode, not a typed "4"
        await settle(pilot)
        assert app.current_mode == "jobs"
        await pilot.press("f2")
        await settle(pilot)
        assert app.screen.query_text == "q?1"
        await pilot.press("ctrl+q")
    assert app.return_code == 0


async def test_the_palette_lists_every_action_of_every_mode_and_runs_it_in_its_mode(service):
    app = pilot_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        commands = {command.title: command for command in app.get_system_commands(app.screen)}
        for mode, screen_class in MindtuiApp.MODES.items():
            for name, _, _ in screen_class.PALETTE:
                assert name in commands, f"{name} ({mode}) is not in the palette"
        for kind, actions in curation_kind_actions().items():
            for action in actions:
                assert f"Card: {action['name']} ({kind.replace('_', ' ')})" in commands
        assert {"Job: Nightly", "Note: copy [[link]]", "Mode: Jobs", "Curation: undo"} <= set(commands)

        await pilot.press("ctrl+p", *"job graph", "enter")  # the palette itself, from Search mode
        await settle(pilot)
        assert app.current_mode == "jobs" and isinstance(app.screen, JobsScreen)
        state = app.screen.query_one("#job-state")
        await until(pilot, lambda: "graph: ok" in str(state.render()))

        app.open_note("Zettelkasten")
        await settle(pilot)
        await commands["Note: copy [[link]]"].callback()
        assert app.clipboard == "[[Zettelkasten]]"

        await pilot.press("alt+1")
        await settle(pilot)
        await commands["Card: pick (ambiguous link)"].callback()  # the queue loads first, then the card's action
        await settle(pilot)
        assert app.current_mode == "curation" and isinstance(app.screen, PickerScreen)
        assert app.screen.title_text.startswith("pick: ")
