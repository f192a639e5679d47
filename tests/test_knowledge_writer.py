"""The proposal format and every rule of the one writer (mindtui.knowledge.writer)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings as hypothesis_settings, strategies as st

from fakes import KeywordEmbedder, unit_at_cosine
from knowledge_support import knowledge_settings, proposal, write_vault
from mindtui.knowledge.proposal import SCHEMA, Proposal, ProposalError, Source, parse_proposal
from mindtui.knowledge.writer import submit
from mindtui.store import knowledge_store as store
from mindtui.store import open_database
from mindtui.store.meta import EMBEDDING_MODEL_KEY, set_meta
from conftest import run_import


@pytest.fixture
def conn(vault, db_path):
    write_vault(vault)
    run_import(db_path, vault.root)
    connection = open_database(db_path)
    yield connection
    connection.close()


@pytest.fixture
def settings():
    return knowledge_settings()


def note_id(conn, path: str) -> str:
    return conn.execute("SELECT note_id FROM notes WHERE path = ?", (path,)).fetchone()[0]


def go(conn, settings, source=None, embedder=None, force=None, **fields):
    return submit(conn, settings, parse_proposal(proposal(**fields)), source or Source.owner(), embedder=embedder,
                  force=force)


def card(conn, card_id: int) -> dict:
    kind, payload, status = conn.execute("SELECT kind, payload, status FROM curation_items WHERE item_id = ?",
                                         (card_id,)).fetchone()
    return {"kind": kind, "status": status, **json.loads(payload)}


AGENT = Source.agent("scout")


# -- the format ---------------------------------------------------------------------------

def test_a_proposal_round_trips_through_its_dict_and_json():
    parsed = parse_proposal(json.dumps(proposal(body="Detail.", quote="he said so", about="Emre", supersedes=3,
                                                confidence=0.7, visibility="private", valid_from="2026-11-30")))
    assert parsed == Proposal("fact", "Emre leads sales", "Detail.", "he said so", "Emre", 3, 0.7, "private",
                              "2026-11-30")
    assert parse_proposal(parsed.as_dict()) == parsed
    assert parse_proposal(proposal(about="topic: Suche")).topic == "Suche"


@pytest.mark.parametrize("data, message", [
    ("{not json", "invalid JSON"),
    ([1, 2], "a proposal is a JSON object"),
    ({"type": "fact", "title": "x"}, "schema: required"),
    (proposal(schema="knowledge_proposal.v2"), "schema: expected 'knowledge_proposal.v1'"),
    (proposal(type="opinion"), "type: expected one of"),
    (proposal(title="two\nlines"), "title: must be one line"),
    (proposal(title="   "), "title: must not be empty"),
    (proposal(title=5), "title: expected text"),
    (proposal(supersedes=True), "supersedes: expected an item id"),
    (proposal(supersedes=0), "supersedes: expected an item id"),
    (proposal(confidence=1.5), "confidence: expected a number from 0 to 1"),
    (proposal(visibility="secret"), "visibility: expected shared or private"),
    (proposal(valid_from="yesterday"), "valid_from:"),
    (proposal(about="topic:  "), "about: 'topic:' needs"),
    (proposal(colour="red"), "unknown field(s) colour"),
])
def test_a_bad_proposal_is_a_clear_error(data, message):
    with pytest.raises(ProposalError, match=None) as caught:
        parse_proposal(data)
    assert message in str(caught.value)


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
                    max_leaves=20)
FIELD_VALUES = st.fixed_dictionaries({}, optional={
    "schema": st.sampled_from([SCHEMA, "knowledge_proposal.v0"]) | JSON,
    "type": st.sampled_from(["fact", "decision", "nope"]) | JSON, "title": st.text(max_size=40) | JSON,
    "body": JSON, "quote": JSON, "about": JSON, "supersedes": JSON, "confidence": JSON, "visibility": JSON,
    "valid_from": JSON})


@hypothesis_settings(max_examples=400, deadline=None)
@given(st.one_of(JSON, FIELD_VALUES, st.binary(max_size=40), st.text(max_size=60)))
def test_arbitrary_input_never_raises_past_the_validator(data):
    try:
        parsed = parse_proposal(data)
    except ProposalError as exc:
        assert str(exc)
    else:
        assert isinstance(parsed, Proposal) and parse_proposal(parsed.as_dict()) == parsed


def test_a_source_must_fit_its_type():
    assert Source.parse("agent:scout") == Source("agent", "agent:scout")
    assert Source.parse("owner") == Source.owner()
    for bad in ("agent:", "someone", "note:abc"):
        with pytest.raises(ProposalError):
            Source.parse(bad)


# -- adding, duplicates, corroboration ----------------------------------------------------

def test_the_owner_adds_confirmed_an_agent_adds_a_draft(conn, settings):
    mine = go(conn, settings, about="Emre")
    theirs = go(conn, settings, AGENT, title="Emre wants more leads", quote="I need more leads", about="Emre")
    assert (mine.decision, theirs.decision) == ("add", "add")
    first, second = store.get_item(conn, mine.item_id), store.get_item(conn, theirs.item_id)
    assert (first.status, second.status) == ("confirmed", "draft")
    assert first.about_note_id == second.about_note_id == note_id(conn, "Personen/Emre.md")
    assert first.confidence == 1.0 and second.confidence == 0.5
    # Its full text is there, analysed like a chunk's (stems: "leads" finds "lead").
    found = conn.execute("SELECT rowid FROM knowledge_fts WHERE knowledge_fts MATCH 'lead'").fetchall()
    assert {row[0] for row in found} == {mine.item_id, theirs.item_id}


def test_an_exact_duplicate_is_corroboration_and_the_owner_confirms_a_draft(conn, settings):
    first = go(conn, settings, AGENT, quote="q", about="Emre")
    again = go(conn, settings, Source.agent("other"), title="  emre LEADS sales. ", quote="q", about="Personen/Emre")
    assert again.decision == "noop" and again.item_id == first.item_id and "corroboration" in again.reason
    assert sorted(s.source_id for s in store.sources_of(conn, first.item_id)) == ["agent:other", "agent:scout"]
    assert store.get_item(conn, first.item_id).status == "draft"
    confirmed = go(conn, settings, about="Emre")
    assert confirmed.decision == "noop" and "confirmed by the owner" in confirmed.reason
    assert store.get_item(conn, first.item_id).status == "confirmed"
    assert conn.execute("SELECT count(*) FROM knowledge_items").fetchone()[0] == 1


def test_the_same_source_again_is_a_noop_or_an_update(conn, settings):
    first = go(conn, settings, AGENT, quote="old words")
    assert go(conn, settings, AGENT, quote="old words").decision == "noop"
    updated = go(conn, settings, AGENT, quote="new words", confidence=0.9)
    assert updated.decision == "update" and "confidence, quote" in updated.reason
    item = store.get_item(conn, first.item_id)
    assert (item.quote, item.confidence) == ("new words", 0.9)


def test_a_missing_quote_files_a_card_once(conn, settings):
    decision = go(conn, settings, AGENT, about="Emre")
    assert decision.decision == "card" and decision.item_id is None
    shown = card(conn, decision.card_id)
    assert shown["kind"] == "missing_quote" and shown["status"] == "open"
    assert parse_proposal(shown["proposal"]).title == "Emre leads sales"
    assert Source.from_dict(shown["source"]) == AGENT
    again = go(conn, settings, AGENT, about="Emre")
    assert again.decision == "card" and again.card_id == decision.card_id and "waiting already" in again.reason
    assert conn.execute("SELECT count(*) FROM curation_items").fetchone()[0] == 1
    assert conn.execute("SELECT count(*) FROM knowledge_items").fetchone()[0] == 0
    # The owner needs no quote.
    assert go(conn, settings, about="Emre").decision == "add"


# -- subjects ---------------------------------------------------------------------------

def test_an_unknown_or_non_entity_about_files_a_card_and_creates_no_note(conn, settings):
    notes = conn.execute("SELECT count(*) FROM notes").fetchone()[0]
    unknown = go(conn, settings, about="Nobody Known")
    assert unknown.decision == "card" and "names no note" in unknown.reason
    shown = card(conn, unknown.card_id)
    assert shown["kind"] == "unresolved_entity" and shown["about"] == "Nobody Known" and shown["candidates"] == []
    not_entity = go(conn, settings, title="Storage is decided", about="Storage")
    assert not_entity.decision == "card" and "not an entity" in not_entity.reason
    assert [c["path"] for c in card(conn, not_entity.card_id)["candidates"]] == ["Notizen/Storage.md"]
    assert conn.execute("SELECT count(*) FROM notes").fetchone()[0] == notes
    # A topic needs no note; an entity is found by title, path, alias or id.
    topic = go(conn, settings, about="topic:Suche")
    assert topic.decision == "add" and store.get_item(conn, topic.item_id).about_topic == "Suche"
    emre = note_id(conn, "Personen/Emre.md")
    by_id = go(conn, settings, title="Emre likes tea", about=emre)
    assert store.get_item(conn, by_id.item_id).about_note_id == emre


def test_a_forced_add_accepts_the_note_the_owner_chose(conn, settings):
    held = go(conn, settings, about="Storage")
    assert held.decision == "card"
    replayed = go(conn, settings, force="add", about="Storage")
    assert replayed.decision == "add" and store.get_item(conn, replayed.item_id).status == "confirmed"
    assert go(conn, settings, force="add", about="Nobody Known").decision == "invalid"


# -- superseding, contradictions ---------------------------------------------------------

def test_supersede_keeps_the_chain(conn, settings):
    old = go(conn, settings, type="decision", title="We use Postgres", about="Mindtui")
    new = go(conn, settings, type="decision", title="We use SQLite", about="Mindtui", supersedes=old.item_id)
    assert new.decision == "supersede"
    before, after = store.get_item(conn, old.item_id), store.get_item(conn, new.item_id)
    assert (before.is_current, before.status, before.superseded_by) == (False, "superseded", new.item_id)
    assert before.ended_at is not None and after.is_current
    assert [i.item_id for i in store.predecessors(conn, new.item_id)] == [old.item_id]
    assert [i.item_id for i in store.successors(conn, old.item_id)] == [new.item_id]
    # Superseded items leave the full text; history stays.
    assert conn.execute("SELECT rowid FROM knowledge_fts WHERE knowledge_fts MATCH 'postgr'").fetchall() == []
    stale = go(conn, settings, type="decision", title="We use MySQL", about="Mindtui", supersedes=old.item_id)
    assert stale.decision == "invalid" and "no longer current" in stale.reason
    assert go(conn, settings, title="x", supersedes=999).decision == "invalid"


def test_only_the_owner_supersedes_a_confirmed_item_of_another_source(conn, settings):
    mine = go(conn, settings, type="decision", title="We use SQLite", about="Mindtui")
    attempt = go(conn, settings, AGENT, type="decision", title="We use Postgres", quote="pg is better",
                 about="Mindtui", supersedes=mine.item_id)
    assert attempt.decision == "card"
    shown = card(conn, attempt.card_id)
    assert shown["kind"] == "contradiction" and shown["item_id"] == mine.item_id
    assert store.get_item(conn, mine.item_id).is_current
    answered = submit(conn, settings, parse_proposal(shown["proposal"]), Source.from_dict(shown["source"]),
                      force=f"supersede:{mine.item_id}")
    assert answered.decision == "supersede" and store.get_item(conn, answered.item_id).status == "confirmed"
    assert store.get_item(conn, mine.item_id).superseded_by == answered.item_id


def test_a_different_decision_on_the_same_subject_is_a_contradiction(conn, settings):
    storage = note_id(conn, "Notizen/Storage.md")
    first = go(conn, settings, Source.note(storage, "callout:decision:1"), type="decision", title="We use SQLite",
               about="Mindtui")
    second = go(conn, settings, Source.note(storage, "callout:decision:2"), type="decision",
                title="Postgres is what we run", about="Mindtui")
    assert first.decision == "add"
    assert second.decision == "card" and card(conn, second.card_id)["kind"] == "contradiction"
    assert card(conn, second.card_id)["items"][0]["item_id"] == first.item_id
    # A fact on the same subject, or a decision about something else, is no contradiction.
    assert go(conn, settings, Source.note(storage, "x"), title="Postgres is what we run", about="Mindtui").decision \
        == "add"
    assert go(conn, settings, type="decision", title="Postgres is what we run", about="Emre").decision == "add"


# -- near duplicates ------------------------------------------------------------------------

def test_a_near_duplicate_by_words_without_a_model(conn, settings):
    first = go(conn, settings, title="Emre wants many more leads this quarter", about="Emre")
    near = go(conn, settings, title="Emre wants many more leads this quarter!!! really", about="Emre")
    assert near.decision == "card" and "word cosine" in near.reason and "no embedding model" in near.reason
    shown = card(conn, near.card_id)
    assert shown["kind"] == "duplicate" and shown["item_id"] == first.item_id and shown["method"] == "word"
    # Another subject is never a duplicate.
    assert go(conn, settings, title="Emre wants many more leads this quarter really", about="Mindtui").decision \
        == "add"


def test_a_near_duplicate_by_vectors_against_the_threshold(conn, settings):
    set_meta(conn, EMBEDDING_MODEL_KEY, "fake-keyword")
    embedder = KeywordEmbedder(unit_at_cosine(1.0), {"alpha": unit_at_cosine(1.0), "beta": unit_at_cosine(0.95),
                                                       "gamma": unit_at_cosine(0.8)})
    first = go(conn, settings, title="alpha statement", about="Emre", embedder=embedder)
    assert first.decision == "add" and store.item_vectors(conn, [first.item_id], "fake-keyword")
    close = go(conn, settings, title="beta words entirely different", about="Emre", embedder=embedder)
    assert close.decision == "card" and "vector cosine 0.950" in close.reason
    far = go(conn, knowledge_settings(near_duplicate_cosine=0.9), title="gamma other words", about="Emre",
             embedder=embedder)
    assert far.decision == "add"


def test_a_failing_embedder_falls_back_to_words(conn, settings):
    class Broken:
        model_id = "broken"

        def embed_passages(self, texts):
            raise RuntimeError("llama exploded")

    decision = go(conn, settings, about="Emre", embedder=Broken())
    assert decision.decision == "add" and "embedding failed" in decision.reason


# -- consent, force, the log ----------------------------------------------------------------

def test_nothing_is_taken_from_an_ai_processing_none_note(conn, settings):
    secret = note_id(conn, "Notizen/Secret.md")
    decision = go(conn, settings, Source.note(secret, "callout:fact:1"), title="Emre earns a lot")
    assert decision.decision == "invalid" and "consent" in decision.reason
    assert conn.execute("SELECT count(*) FROM knowledge_items").fetchone()[0] == 0
    missing = go(conn, settings, Source.note("nope", "k"), title="x")
    assert missing.decision == "invalid" and "not in the index" in missing.reason


def test_merge_records_the_source_on_the_chosen_item(conn, settings):
    first = go(conn, settings, AGENT, quote="q", about="Emre")
    merged = go(conn, settings, Source.agent("b"), title="Emre heads sales", quote="q", about="Emre",
                force=f"merge:{first.item_id}")
    assert merged.decision == "noop" and merged.item_id == first.item_id and "merged" in merged.reason
    assert store.get_item(conn, first.item_id).status == "confirmed"
    assert len(store.sources_of(conn, first.item_id)) == 2
    assert go(conn, settings, force="later").decision == "invalid"


def test_every_decision_is_logged_with_its_reason(conn, settings):
    made = [go(conn, settings, about="Emre"), go(conn, settings, about="Emre"), go(conn, settings, AGENT),
            go(conn, settings, supersedes=77)]
    rows = conn.execute("SELECT decision, reason, item_id, card_id, source_id, proposal FROM knowledge_decisions"
                        " ORDER BY decision_id").fetchall()
    assert [r[0] for r in rows] == [d.decision for d in made] == ["add", "noop", "card", "invalid"]
    assert all(r[1] for r in rows) and rows[2][3] == made[2].card_id and rows[0][2] == made[0].item_id
    assert json.loads(rows[0][5])["title"] == "Emre leads sales" and rows[2][4] == "agent:scout"


def test_submit_works_inside_the_callers_transaction(conn, settings):
    with conn:
        decision = go(conn, settings, about="Emre")
    assert decision.decision == "add" and store.get_item(conn, decision.item_id) is not None


def test_about_is_resolved_among_the_notes_the_proposer_may_see(conn, settings, db_path):
    from mindtui.audience import Audience

    agent_view = open_database(db_path, audience=Audience.AGENT)
    try:
        hidden = go(conn, settings, AGENT, quote="q", about="Hidden Person")
        assert hidden.decision == "add"  # the writer's own view resolves it...
        held = submit(conn, settings, parse_proposal(proposal(title="Someone is shy", quote="q",
                                                              about="Hidden Person")),
                      AGENT, about_conn=agent_view)
        assert held.decision == "card" and card(conn, held.card_id)["kind"] == "unresolved_entity"  # ...an agent's not
        assert card(conn, held.card_id)["candidates"] == []
    finally:
        agent_view.close()
