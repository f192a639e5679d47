"""The knowledge kinds of curation card: every action, through the service as `mindtui curate` and the
TUI use it, and what it feeds back into the writer (a replayed proposal, an owner item, a retraction)."""

from __future__ import annotations

import pytest

from mindtui.audience import Audience
from mindtui.config import load_settings
from mindtui.curation.registry import KINDS
from mindtui.jobs.runner import run_job
from mindtui.knowledge.cards import KNOWLEDGE_KINDS
from mindtui.knowledge.proposal import Source, parse_proposal
from mindtui.knowledge.writer import submit
from mindtui.service import InputError, Service
from mindtui.store import knowledge_store, open_database

FILES = {
    "Personen/Emre.md": "# Emre\n\nEmre leads sales.\n",
    "Personen/Bob.md": "# Bob\n\nBob.\n",
    "Projekte/Mindtui.md": "# Mindtui\n\nA second brain with [[Emre]] and [[Bob]].\n",
    "Notizen/Meeting.md": "# Meeting\n\n> [!decision] We keep the index in SQLite\n> about: [[Mindtui]]\n",
}
AGENT = Source.agent("scout")


@pytest.fixture
def desk(vault, db_path):
    for path, text in FILES.items():
        vault.write(path, text, dedent=False)
    settings = load_settings(overrides={"db": str(db_path), "knowledge": {"max_gap_questions": 10}})
    result = run_job("nightly", settings, db_path=db_path, vault=vault.root,
                     steps=["import", "graph", "consolidate", "gaps"])
    assert result.ok, [(s.step, s.error) for s in result.steps]
    service = Service(settings, audience=Audience.OWNER)
    yield service, settings, vault
    service.close()


def propose(settings, source=AGENT, **fields):
    data = {"schema": "knowledge_proposal.v1", "type": "fact", "title": "Emre leads sales", "about": "Emre",
            "quote": "Emre leads sales.", **fields}
    conn = open_database(settings.db_path)
    try:
        return submit(conn, settings, parse_proposal(data), source)
    finally:
        conn.close()


def item(settings, item_id):
    conn = open_database(settings.db_path)
    try:
        return knowledge_store.get_item(conn, item_id)
    finally:
        conn.close()


def query(settings, sql, args=()):
    conn = open_database(settings.db_path)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def keys(kind_name):
    return {action.key: action.name for action in KINDS[kind_name].actions}


def test_every_knowledge_kind_is_in_the_queue_with_one_distinct_key_per_action():
    for kind in KNOWLEDGE_KINDS:
        assert KINDS[kind.name] is kind
        letters = [action.key for action in kind.actions]
        assert len(set(letters)) == len(letters)
        assert all(len(k) == 1 and k not in "uq0123456789" for k in letters)
    assert keys("gap_question") == {"a": "answer", "r": "reject", "s": "snooze"}
    assert keys("stale") == {"c": "confirm", "e": "supersede", "r": "reject", "s": "snooze"}


def test_unresolved_entity_link_replays_the_proposal_about_the_chosen_note(desk):
    service, settings, _ = desk
    decision = propose(settings, about="Emre Yilmaz")
    card = service.curation_card(decision.card_id)
    assert card.kind == "unresolved_entity" and "Emre Yilmaz" in card.description
    outcome = service.curation_resolve(card.item_id, "link", target="Personen/Emre.md")
    assert outcome.status == "resolved" and "add" in outcome.message
    added = item(settings, service.curation_card(card.item_id).answer["knowledge_item"])
    emre = query(settings, "SELECT note_id FROM notes WHERE path = 'Personen/Emre.md'")[0][0]
    assert (added.about_note_id, added.status, added.source_id) == (emre, "confirmed", "agent:scout")


def test_unresolved_entity_topic_and_reject(desk):
    service, settings, _ = desk
    first = propose(settings, about="Vertrieb", title="Sales doubled")
    service.curation_resolve(first.card_id, "topic")
    kept = item(settings, service.curation_card(first.card_id).answer["knowledge_item"])
    assert (kept.about_note_id, kept.about_topic) == (None, "Vertrieb")
    second = propose(settings, about="Nobody", title="Nobody knows")
    outcome = service.curation_resolve(second.card_id, "reject")
    assert outcome.status == "dismissed"
    assert query(settings, "SELECT count(*) FROM knowledge_items WHERE title = 'Nobody knows'") == [(0,)]
    assert propose(settings, about="Nobody", title="Nobody knows").decision == "noop"  # answered: not asked again


def test_duplicate_merge_confirm_and_supersede(desk):
    service, settings, _ = desk
    existing = propose(settings).item_id
    merge = propose(settings, source=Source.agent("other"), title="Sales? Emre leads")
    assert service.curation_card(merge.card_id).kind == "duplicate"
    service.curation_resolve(merge.card_id, "merge")
    sources = {r[0] for r in query(settings, "SELECT source_id FROM knowledge_sources WHERE item_id = ?", (existing,))}
    assert "agent:other" in sources and item(settings, existing).status == "confirmed"
    keep = propose(settings, source=Source.agent("third"), title="Emre - leads sales")
    service.curation_resolve(keep.card_id, "confirm")
    new = service.curation_card(keep.card_id).answer["knowledge_item"]
    assert new != existing and item(settings, new).is_current and item(settings, existing).is_current
    replace = propose(settings, source=Source.agent("fourth"), title="leads sales, Emre")
    card = service.curation_card(replace.card_id)
    service.curation_resolve(card.item_id, "supersede")
    target = card.payload["item_id"]
    assert not item(settings, target).is_current
    assert item(settings, target).superseded_by == service.curation_card(card.item_id).answer["knowledge_item"]


def test_contradiction_supersede_or_reject(desk):
    service, settings, _ = desk
    sqlite = query(settings, "SELECT item_id FROM knowledge_items WHERE title = 'We keep the index in SQLite'")[0][0]
    first = propose(settings, type="decision", title="We keep the index in Postgres", about="Mindtui")
    card = service.curation_card(first.card_id)
    assert card.kind == "contradiction" and card.payload["item_id"] == sqlite
    service.curation_resolve(card.item_id, "reject")
    assert item(settings, sqlite).is_current
    second = propose(settings, source=Source.agent("b"), type="decision", title="We keep the index in DuckDB",
                     about="Mindtui")
    service.curation_resolve(second.card_id, "supersede")
    new = item(settings, service.curation_card(second.card_id).answer["knowledge_item"])
    assert (new.title, new.status) == ("We keep the index in DuckDB", "confirmed")
    assert item(settings, sqlite).superseded_by == new.item_id


def test_missing_quote_answer_and_confirm(desk):
    service, settings, _ = desk
    first = propose(settings, quote=None, title="Emre likes numbers")
    assert service.curation_card(first.card_id).kind == "missing_quote"
    with pytest.raises(InputError):
        service.curation_resolve(first.card_id, "answer")  # needs --text
    service.curation_resolve(first.card_id, "answer", text="Emre: show me the numbers")
    quoted = item(settings, service.curation_card(first.card_id).answer["knowledge_item"])
    assert (quoted.quote, quoted.status) == ("Emre: show me the numbers", "confirmed")  # the owner supplied it
    second = propose(settings, quote=None, title="Bob likes words", about="Bob")
    service.curation_resolve(second.card_id, "confirm")
    taken = item(settings, service.curation_card(second.card_id).answer["knowledge_item"])
    assert (taken.quote, taken.status) == (None, "confirmed")


def test_a_gap_question_answered_is_a_confirmed_owner_item_and_the_question_closes(desk):
    service, settings, vault = desk
    card = next(c for c in service.curation_list("gap_question") if c.payload["note"]["path"] == "Personen/Bob.md")
    service.curation_resolve(card.item_id, "answer", text="Bob reviews every release\nUsually on Fridays.",
                             type="playbook")
    made = item(settings, service.curation_card(card.item_id).answer["knowledge_item"])
    assert (made.type, made.title, made.body, made.status, made.source_type) == (
        "playbook", "Bob reviews every release", "Usually on Fridays.", "confirmed", "owner")
    assert made.about_note_id == card.note_id
    with pytest.raises(InputError):
        service.curation_resolve(next(iter(service.curation_list("gap_question"))).item_id, "answer",
                                 text="x", type="opinion")
    result = run_job("nightly", settings, db_path=settings.db_path, vault=vault.root, steps=["gaps"])
    assert result.ok and "Personen/Bob.md" not in {c.payload["note"]["path"]
                                                   for c in service.curation_list("gap_question", status=None)
                                                   if c.status == "open"}


def test_gap_reject_and_snooze(desk):
    service, settings, vault = desk
    first, second = service.curation_list("gap_question")[:2]
    assert service.curation_resolve(first.item_id, "reject").status == "dismissed"
    snoozed = service.curation_resolve(second.item_id, "snooze", days=3)
    assert snoozed.status == "snoozed" and service.curation_card(second.item_id).snoozed_until
    run_job("nightly", settings, db_path=settings.db_path, vault=vault.root, steps=["gaps"])
    assert service.curation_card(first.item_id).status == "dismissed"  # never asked again


def _make_stale(desk):
    service, settings, vault = desk
    vault.write("Notizen/Meeting.md", "# Meeting\n\nNothing decided.\n", dedent=False)
    result = run_job("nightly", settings, db_path=settings.db_path, vault=vault.root, steps=["import"])
    assert result.ok
    (card,) = service.curation_list("stale")
    return card


def test_stale_confirm_keeps_the_item_for_good(desk):
    service, settings, vault = desk
    card = _make_stale(desk)
    service.curation_resolve(card.item_id, "confirm")
    kept = item(settings, card.payload["item_id"])
    assert (kept.status, kept.stale_since, kept.source_hash, kept.is_current) == ("confirmed", None, None, True)
    run_job("nightly", settings, db_path=settings.db_path, vault=vault.root, steps=["import", "consolidate"])
    assert service.curation_list("stale") == []


def test_stale_supersede_with_text_and_reject_retracts(desk):
    service, settings, vault = desk
    card = _make_stale(desk)
    service.curation_resolve(card.item_id, "supersede", text="We keep the index in SQLite with WAL")
    old = item(settings, card.payload["item_id"])
    new = item(settings, old.superseded_by)
    assert (new.title, new.type, new.about_note_id, new.status) == (
        "We keep the index in SQLite with WAL", "decision", old.about_note_id, "confirmed")
    vault.write("Notizen/Meeting.md", "# Meeting\n\n> [!fact] Lunch was good\n", dedent=False)
    run_job("nightly", settings, db_path=settings.db_path, vault=vault.root, steps=["import"])
    vault.write("Notizen/Meeting.md", "# Meeting\n\nNothing.\n", dedent=False)
    run_job("nightly", settings, db_path=settings.db_path, vault=vault.root, steps=["import"])
    (lunch,) = service.curation_list("stale")
    assert service.curation_resolve(lunch.item_id, "reject").status == "resolved"
    retracted = item(settings, lunch.payload["item_id"])
    assert not retracted.is_current and retracted.ended_at
    reasons = [r[0] for r in query(settings, "SELECT reason FROM knowledge_decisions WHERE item_id = ?",
                                   (retracted.item_id,))]
    assert any("retracted" in reason for reason in reasons)


def test_an_answer_the_writer_refuses_leaves_the_card_open(desk):
    service, settings, _ = desk
    existing = propose(settings).item_id
    card_id = propose(settings, source=Source.agent("other"), title="Sales? Emre leads").card_id
    conn = open_database(settings.db_path)
    try:
        with conn:
            knowledge_store.end_item(conn, existing, None, "2026-11-30T00:00:00+00:00")
    finally:
        conn.close()
    with pytest.raises(InputError, match="no longer current"):
        service.curation_resolve(card_id, "merge")
    assert service.curation_card(card_id).status == "open"
