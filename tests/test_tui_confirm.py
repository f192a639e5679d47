"""Answers that write vault files beyond one added link show their writes first (the service's
dry run) and apply on another key than the one that opened them; database-only answers take
one key; `u` undoes both."""

from __future__ import annotations

import pytest
from tui_support import fixed_service, pilot_app, settle

from mindtui.service import InputError
from mindtui.tui.confirm_writes import ConfirmWrites
from mindtui.tui.curation_screen import CurationScreen


@pytest.fixture
def service(sample_vault, db_path):
    with fixed_service(sample_vault.root, db_path) as service:
        yield service


def unresolved(service):
    return service.curation_list(kind="unresolved_link")


def test_the_preview_is_a_dry_run_of_the_answer(service, sample_vault):
    card = unresolved(service)[0]
    source = sample_vault.root / card.payload["source_path"]
    before = source.read_bytes()
    files_before = sorted(p.relative_to(sample_vault.root) for p in sample_vault.root.rglob("*"))
    [write] = service.curation_preview(card.item_id, "create")
    assert write.change == "create" and write.before is None and write.path.endswith(".md")
    assert write.diff.startswith("--- /dev/null\n+++ b/") and f"+# {card.payload['target']}" in write.diff
    target = next(c for c in service.curation_list(kind="ambiguous_link"))
    [rewrite] = service.curation_preview(target.item_id, "pick", target=target.payload["candidates"][0]["note_id"])
    assert rewrite.change == "modify" and rewrite.before != rewrite.after
    assert any(line.startswith("-") and "[[" in line for line in rewrite.diff.splitlines()[2:])
    # Nothing was written, nothing answered.
    assert sorted(p.relative_to(sample_vault.root) for p in sample_vault.root.rglob("*")) == files_before
    assert source.read_bytes() == before and service.curation_card(card.item_id).status == "open"
    with pytest.raises(InputError, match="no preview"):
        service.curation_preview(card.item_id, "dismiss")


async def select(pilot, screen: CurationScreen, item_id: int) -> None:
    while screen.selected().item_id != item_id:
        await pilot.press("down")


async def test_create_shows_its_file_applies_on_y_only_and_u_undoes_it(service, sample_vault):
    card = unresolved(service)[0]
    app = pilot_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("tab", "3")
        await settle(pilot)
        screen = app.screen
        await select(pilot, screen, card.item_id)
        await pilot.press("c")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmWrites)
        [write] = app.screen.writes
        created = sample_vault.root / write.path
        assert write.change == "create" and write.path in str(app.screen.query_one("#confirm-diff Static").render())
        await pilot.press("c")  # the key that opened it again: nothing
        await settle(pilot)
        assert isinstance(app.screen, ConfirmWrites) and not created.exists()
        await pilot.press("y")
        await settle(pilot)
        assert app.screen is screen and created.exists()
        assert service.curation_card(card.item_id).status == "resolved"
        await pilot.press("u")
        await settle(pilot)
        assert not created.exists() and service.curation_card(card.item_id).status == "open"

        await select(pilot, screen, card.item_id)
        await pilot.press("c")
        await settle(pilot)
        await pilot.press("escape")  # cancelled: nothing written, the card stays
        await settle(pilot)
        assert app.screen is screen and not created.exists()
        assert service.curation_card(card.item_id).status == "open"

        await pilot.press("d")  # dismiss writes no file: one key, no preview
        await settle(pilot)
        assert app.screen is screen and service.curation_card(card.item_id).status == "dismissed"
        await pilot.press("u")
        await settle(pilot)
        assert service.curation_card(card.item_id).status == "open"
