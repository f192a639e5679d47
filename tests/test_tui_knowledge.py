"""Pilot tests of the Knowledge mode and of knowledge in the other modes: add and edit an item by
keyboard, its supersede chain, the Note mode's items, a knowledge result in Search."""

from __future__ import annotations

import pytest
from tui_support import fixed_service, pilot_app, settle

from mindtui.tui.knowledge_form import KnowledgeForm
from mindtui.tui.knowledge_screen import KnowledgeScreen


@pytest.fixture
def service(sample_vault, db_path):
    with fixed_service(sample_vault.root, db_path) as service:
        yield service


tui = pilot_app


async def knowledge_mode(pilot) -> KnowledgeScreen:
    await pilot.press("tab", "5")
    await settle(pilot)
    assert isinstance(pilot.app.screen, KnowledgeScreen)
    return pilot.app.screen


async def new_item_form(pilot) -> tuple[KnowledgeScreen, int]:
    """Knowledge mode, then `a`: the screen under the form and how many items it listed."""
    screen = await knowledge_mode(pilot)
    before = len(screen.items)
    await pilot.press("a")
    await settle(pilot)
    return screen, before


async def test_enter_in_a_form_field_goes_on_to_the_next_field_and_saves_nothing(service):
    """An edit saved by Enter superseded the item with what was typed so far."""
    app = tui(service)
    async with app.run_test(size=(80, 24)) as pilot:
        screen, before = await new_item_form(pilot)
        await pilot.press(*"Ein halber Satz", "enter")
        await settle(pilot)
        assert isinstance(app.screen, KnowledgeForm) and app.focused.id == "form-about"
        await pilot.press(*"topic:Tests", "enter")
        assert app.focused.id == "form-quote"
        await pilot.press("ctrl+o")
        await settle(pilot)
        assert app.screen is screen and len(screen.items) == before + 1


async def test_after_a_save_the_cursor_is_on_what_was_saved(service):
    """The list went back to its first item after the form closed (and after every reload)."""
    app = tui(service)
    async with app.run_test(size=(80, 24)) as pilot:
        screen, _ = await new_item_form(pilot)
        items = screen.query_one("#items")
        await pilot.press(*"Zuletzt geprüft am Sonntag", "tab", *"topic:Zwiebelringe", "ctrl+o")
        await settle(pilot)
        added = screen.rows[items.highlighted]
        assert added.title == "Zuletzt geprüft am Sonntag" and items.highlighted > 1  # not the first row
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        await pilot.press("end", *"abend", "ctrl+o")
        await settle(pilot)
        edited = screen.rows[items.highlighted]
        assert edited.title == "Zuletzt geprüft am Sonntagabend" and edited.item_id != added.item_id


async def test_add_and_edit_an_item_by_keyboard_keeps_the_history(service):
    app = tui(service)
    async with app.run_test(size=(80, 24)) as pilot:
        screen, before = await new_item_form(pilot)
        assert isinstance(app.screen, KnowledgeForm)
        await pilot.press(*"Wir speichern alles in einer SQLite-Datei", "tab", *"Projekt Zweites Gehirn", "ctrl+o")
        await settle(pilot)
        assert app.screen is screen
        added = [i for i in screen.items if i.title == "Wir speichern alles in einer SQLite-Datei"]
        assert len(screen.items) == before + 1 and len(added) == 1
        item = added[0]
        assert item.status == "confirmed" and item.source_type == "owner"  # the owner is the source
        assert item.about_note_id is not None  # the entity note it is about
        while screen.detail is None or screen.detail.item_id != item.item_id:
            await pilot.press("down")
            await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        assert isinstance(app.screen, KnowledgeForm) and app.screen.item.item_id == item.item_id
        await pilot.press("end", *" (mit WAL)", "ctrl+o")
        await settle(pilot)
        current = [i for i in screen.items if i.title.startswith("Wir speichern alles")]
        assert [i.title for i in current] == ["Wir speichern alles in einer SQLite-Datei (mit WAL)"]
        edited = service.knowledge_item(current[0].item_id)
        assert [link["item_id"] for link in edited.supersedes] == [item.item_id]  # the chain keeps the old one
        old = service.knowledge_item(item.item_id)
        assert old.status == "superseded" and not old.is_current and old.superseded_by == edited.item_id
        await pilot.press("h")  # history: the superseded item is listed again
        await settle(pilot)
        assert item.item_id in [i.item_id for i in screen.items]


async def test_the_note_mode_lists_the_notes_items_and_search_finds_an_item(service):
    decision = service.knowledge_submit({"schema": "knowledge_proposal.v1", "type": "preference",
                                         "title": "Jonas bevorzugt kurze Folien mit einem Gedanken",
                                         "about": "Jonas Weber"}, source="owner")
    assert decision.decision == "add", decision
    app = tui(service)
    async with app.run_test(size=(80, 24)) as pilot:
        app.open_note("Jonas Weber")
        await settle(pilot)
        assert decision.item_id in [i.item_id for i in app.screen.items]
        await pilot.press("f2", *"kurze Folien Gedanken")
        await settle(pilot)
        hit = next(r for r in app.screen.results if r.kind == "knowledge")
        assert hit.item_id == decision.item_id
        while app.screen.selected() is not hit:
            await pilot.press("down")
        await pilot.press("enter")
        await settle(pilot)
        assert app.current_mode == "knowledge" and app.screen.detail.item_id == decision.item_id


async def test_round_trip_proposal_card_answer_by_keyboard_confirmed_item_found_by_search(service):
    """An agent's proposal without a quote becomes a card; the owner answers it by keyboard with
    the quote; the item is confirmed and search finds it."""
    decision = service.knowledge_submit({"schema": "knowledge_proposal.v1", "type": "learning",
                                         "title": "Reranking lohnt sich erst ab zwanzig Kandidaten",
                                         "about": "topic:Suche"}, source="agent:assistent")
    assert decision.decision == "card" and decision.item_id is None
    card = service.curation_card(decision.card_id)
    assert card.kind == "missing_quote" and card.status == "open"
    assert not [i for i in service.knowledge_list() if i.title.startswith("Reranking lohnt")]
    app = tui(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("tab", "3")
        await settle(pilot)
        screen = app.screen
        while screen.selected().item_id != card.item_id:
            await pilot.press("down")
        await pilot.press("a")  # answer: the quote
        await settle(pilot)
        await pilot.press(*"ab zwanzig Kandidaten lohnt das Nachsortieren", "ctrl+o")
        await settle(pilot)
        assert service.curation_card(card.item_id).status == "resolved"
        item = next(i for i in service.knowledge_list() if i.title.startswith("Reranking lohnt"))
        assert item.status == "confirmed" and item.quote == "ab zwanzig Kandidaten lohnt das Nachsortieren"
        assert item.source_type == "agent"  # the agent stays the source; the owner's answer confirmed it
        await pilot.press("f2", *"Reranking zwanzig Kandidaten", "ctrl+f", "tab", "tab", "tab", *"knowledge")
        await settle(pilot)
        assert app.screen.results[0].kind == "knowledge" and app.screen.results[0].item_id == item.item_id


async def test_edit_pressed_before_the_moved_to_items_detail_edits_that_item(service):
    app = tui(service)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await knowledge_mode(pilot)
        rows = [n for n, row in enumerate(screen.rows) if row is not None]
        assert len(rows) >= 2 and screen.detail.item_id == screen.rows[rows[0]].item_id
        # A move and `e` handled before the detail worker answers (keys that arrive together):
        # the old code opened the form of the item just left.
        screen.query_one("#items").highlighted = rows[1]
        screen.action_edit()
        await settle(pilot)
        assert isinstance(app.screen, KnowledgeForm)
        assert app.screen.item.item_id == screen.rows[rows[1]].item_id
