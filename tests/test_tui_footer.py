"""The key footer recomposes only when the keys it shows change: Textual's Footer mounted all its
key widgets again on every focus move and mode switch (15 times while a note opened from Search)."""

from __future__ import annotations

import pytest
from textual.widgets._footer import FooterKey
from tui_support import fixed_service, pilot_app, settle


@pytest.fixture
def service(sample_vault, db_path):
    with fixed_service(sample_vault.root, db_path) as service:
        yield service


async def test_the_footer_keeps_its_keys_while_they_stay_the_same_and_changes_with_them(service):
    app = pilot_app(service)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        screen = app.screen
        footer = screen.query_one("KeyFooter")
        keys = list(footer.query(FooterKey))
        assert keys and any(k.description == "Filters" for k in keys)
        for _ in range(3):  # what a focus move that keeps the keys says
            screen.bindings_updated_signal.publish(screen)
            await pilot.pause()
        assert list(footer.query(FooterKey)) == keys and all(k.is_attached for k in keys)
        screen.query_one("#results").focus()  # the result list: other keys
        await settle(pilot)
        shown = {k.description for k in footer.query(FooterKey)}
        assert shown != {k.description for k in keys}
        screen.query_one("#query").focus()
        await settle(pilot)
        assert {k.description for k in footer.query(FooterKey)} == {k.description for k in keys}
