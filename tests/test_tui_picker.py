"""The note search picker (a card's `retarget`, a knowledge item's subject): Enter picks from the
answer to what is typed, also when it comes before that answer (keys typed ahead in one burst)."""

import pytest
from textual.widgets import Input
from tui_support import fixed_service, pilot_app, settle

from mindtui.tui.picker import NoteSearchPicker


@pytest.fixture
def service(sample_vault, db_path):
    with fixed_service(sample_vault.root, db_path) as service:
        yield service


async def _open_picker(pilot, initial: str, picked: list) -> NoteSearchPicker:
    await settle(pilot)
    pilot.app.push_screen(NoteSearchPicker("link to", initial=initial), picked.append)
    await settle(pilot)
    return pilot.app.screen


async def test_enter_before_the_answer_picks_from_the_answer_to_what_is_typed(service):
    picked = []
    async with pilot_app(service).run_test(size=(80, 24)) as pilot:
        picker = await _open_picker(pilot, "Vergessenskurve", picked)
        assert picker.results and picker.results[0].path != "Personen/Jonas Weber.md"
        query = picker.query_one("#picker-query", Input)
        # The new query and Enter handled before its search thread answers: the old code took
        # the first row of the answer to "Vergessenskurve".
        query.value = "Jonas Weber"
        await query.action_submit()
        await settle(pilot)
        assert len(picked) == 1
        paths = {r.note_id: r.path for r in service.search("Jonas Weber", _options()).results}
        assert paths.get(picked[0]) == "Personen/Jonas Weber.md"


async def test_enter_on_an_answered_query_picks_its_highlighted_row(service):
    picked = []
    async with pilot_app(service).run_test(size=(80, 24)) as pilot:
        first = (await _open_picker(pilot, "Jonas Weber", picked)).results[0].note_id
        await pilot.press("enter")
        await settle(pilot)
        assert picked == [first]


def _options():
    from mindtui.service import SearchOptions

    return SearchOptions(mode="fts", limit=20, log=False)
