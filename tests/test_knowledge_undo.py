"""`curate undo` of a knowledge card's answer puts the knowledge back (store.knowledge_journal):
the item the answer added ends (kept as history), an item it superseded, confirmed, retracted
or corroborated is as it was; refused, with nothing undone, when such an item changed since."""

from __future__ import annotations

import pytest

from mindtui.jobs.runner import run_job
from mindtui.knowledge.proposal import Source
from mindtui.service import OperationFailed, SearchOptions
import test_knowledge_cards as cards
from test_knowledge_cards import _make_stale, item, propose, query

desk = cards.desk  # the same vault of entities, a meeting's decision and a gap question


def fts_titles(service, words):
    found = service.search(words, SearchOptions(kind="knowledge", mode="fts", log=False)).results
    return {r.title for r in found}


def test_undo_of_a_supersede_makes_the_old_item_current_again_and_searchable(desk):
    service, settings, _ = desk
    sqlite = query(settings, "SELECT item_id FROM knowledge_items WHERE title = 'We keep the index in SQLite'")[0][0]
    before = item(settings, sqlite)
    card = propose(settings, type="decision", title="We keep the index in Postgres", about="Mindtui").card_id
    service.curation_resolve(card, "supersede")
    new = service.curation_card(card).answer["knowledge_item"]
    assert not item(settings, sqlite).is_current and "We keep the index in SQLite" not in fts_titles(service, "SQLite")
    undone = service.curation_undo()
    assert undone.status == "open" and f"item #{new} retracted" in undone.message and f"item #{sqlite}" in undone.message
    again = item(settings, sqlite)
    assert (again.is_current, again.status, again.superseded_by, again.ended_at) == (
        True, before.status, None, None)
    assert not item(settings, new).is_current and item(settings, new).superseded_by is None  # kept as history
    assert "We keep the index in SQLite" in fts_titles(service, "SQLite")
    assert "We keep the index in Postgres" not in fts_titles(service, "Postgres")
    # The reopened card is answered as if the first answer had not been: both hold.
    service.curation_resolve(card, "confirm")
    beside = service.curation_card(card).answer["knowledge_item"]
    assert item(settings, sqlite).is_current and item(settings, beside).is_current and beside != new
    reasons = [r[0] for r in query(settings, "SELECT reason FROM knowledge_decisions WHERE item_id = ?", (sqlite,))]
    assert any(f"undid the answer to card {card}" in reason for reason in reasons)


def test_undo_then_another_answer_leaves_one_item_for_one_callout(desk):
    """topic, undo, link, import: the callout backs one current item, so no stale card claims it is gone."""
    service, settings, vault = desk
    vault.write("Notizen/Call.md", "# Call\n\n> [!fact] Emre wants more leads\n> about: [[Emre Yilmaz]]\n", dedent=False)
    run_job("nightly", settings, db_path=settings.db_path, vault=vault.root, steps=["import"])
    (card,) = service.curation_list("unresolved_entity")
    service.curation_resolve(card.item_id, "topic")
    service.curation_undo()
    service.curation_resolve(card.item_id, "link", target="Personen/Emre.md")
    result = run_job("nightly", settings, db_path=settings.db_path, vault=vault.root, steps=["import", "consolidate"])
    assert result.ok
    current = query(settings, "SELECT about_note_id IS NOT NULL FROM knowledge_items"
                              " WHERE title = 'Emre wants more leads' AND is_current = 1")
    assert current == [(1,)] and service.curation_list("stale") == []


def test_undo_of_a_merge_takes_its_source_out_and_the_item_is_a_draft_again(desk):
    service, settings, _ = desk
    existing = propose(settings).item_id
    merge = propose(settings, source=Source.agent("other"), title="Sales? Emre leads")
    service.curation_resolve(merge.card_id, "merge")
    assert item(settings, existing).status == "confirmed"
    service.curation_undo()
    sources = {r[0] for r in query(settings, "SELECT source_id FROM knowledge_sources WHERE item_id = ?", (existing,))}
    assert "agent:other" not in sources and item(settings, existing).status == "draft"


def test_undo_of_a_stale_cards_reject_and_confirm(desk):
    service, settings, _ = desk
    card = _make_stale(desk)
    target = card.payload["item_id"]
    before = item(settings, target)
    service.curation_resolve(card.item_id, "reject")
    assert not item(settings, target).is_current
    service.curation_undo()
    assert item(settings, target).is_current and item(settings, target).stale_since == before.stale_since
    service.curation_resolve(card.item_id, "confirm")
    service.curation_undo()
    back = item(settings, target)
    assert (back.status, back.source_hash, back.stale_since) == (before.status, before.source_hash, before.stale_since)
    assert "owner" not in {r[0] for r in query(settings, "SELECT source_type FROM knowledge_sources WHERE item_id = ?",
                                               (target,))}


def test_undo_is_refused_when_the_added_item_was_superseded_since(desk):
    service, settings, _ = desk
    card = propose(settings, type="decision", title="We keep the index in Postgres", about="Mindtui").card_id
    service.curation_resolve(card, "supersede")
    new = service.curation_card(card).answer["knowledge_item"]
    later = service.knowledge_submit({"schema": "knowledge_proposal.v1", "type": "decision", "about": "Mindtui",
                                      "title": "We keep the index in DuckDB", "supersedes": new}, "owner")
    assert later.decision == "supersede"
    with pytest.raises(OperationFailed, match=f"item #{new}, which it added, is no longer current.*nothing was undone"):
        service.curation_undo()
    assert service.curation_card(card).status == "resolved" and item(settings, later.item_id).is_current
