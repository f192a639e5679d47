"""Knowledge items through the service, the CLI, search, the embedding sweep and the audience rule."""

from __future__ import annotations

import json

import pytest

from fakes import DeterministicFakeEmbedder, KeywordEmbedder, unit_at_cosine
from knowledge_support import proposal, write_vault
from mindtui.audience import Audience
from mindtui.cli import main
from mindtui.config import load_settings
from mindtui.errors import NotAllowed, NotFound
from mindtui.knowledge.proposal import Source
from mindtui.knowledge.writer import submit
from mindtui.models.holder import ModelHolder
from mindtui.models.sweep import run_embed_sweep
from mindtui.service import SearchOptions, Service
from mindtui.service.item_ids import ItemIds
from mindtui.store import knowledge_store, open_database
from mindtui.store.meta import EMBEDDING_MODEL_KEY, set_meta

from conftest import agents_number, run_import


@pytest.fixture
def settings(vault, db_path):
    write_vault(vault)
    run_import(db_path, vault.root)
    return load_settings().with_values({"db": str(db_path), "search": {"min_cosine": -1.0}})


@pytest.fixture
def owner(settings):
    with Service(settings, audience=Audience.OWNER, models=ModelHolder()) as service:
        yield service


def note_id(settings, path: str) -> str:
    conn = open_database(settings.db_path)
    try:
        return conn.execute("SELECT note_id FROM notes WHERE path = ?", (path,)).fetchone()[0]
    finally:
        conn.close()


def test_the_owner_adds_lists_shows_and_edits(owner):
    first = owner.knowledge_submit(proposal(type="decision", title="We use Postgres", about="Mindtui"))
    assert first.decision == "add"
    edited = owner.knowledge_edit(first.item_id, title="We use SQLite", quote="one file is enough")
    assert edited.decision == "supersede"
    listed = owner.knowledge_list(about="Mindtui")
    assert [v.title for v in listed] == ["We use SQLite"] and listed[0].about == "Mindtui"
    assert listed[0].about_path == "Projekte/Mindtui.md" and listed[0].status == "confirmed"
    history = owner.knowledge_list(about="Mindtui", current_only=False)
    assert [v.title for v in history] == ["We use SQLite", "We use Postgres"]
    assert [v.title for v in owner.knowledge_list(status="superseded")] == ["We use Postgres"]
    shown = owner.knowledge_item(edited.item_id)
    assert [i["item_id"] for i in shown.supersedes] == [first.item_id] and shown.quote == "one file is enough"
    assert [d["decision"] for d in shown.decisions] == ["add", "supersede"]
    assert shown.sources[0]["source_id"] == "owner"
    old = owner.knowledge_item(first.item_id)
    assert [i["item_id"] for i in old.superseded_chain] == [edited.item_id] and not old.is_current
    assert [v.item_id for v in owner.knowledge_for_note("Projekte/Mindtui.md")] == [edited.item_id]
    assert owner.status()["knowledge_current"] == 1


def test_for_note_holds_items_about_it_and_items_stated_in_it(owner, settings):
    storage = note_id(settings, "Notizen/Storage.md")
    conn = open_database(settings.db_path)
    try:
        stated = submit(conn, settings, proposal(title="SQLite was compared", quote="We compared"),
                        Source.note(storage, "callout:fact:1", 0, "h"))
    finally:
        conn.close()
    about = owner.knowledge_submit(proposal(title="Emre leads sales", about="Emre"))
    assert [v.item_id for v in owner.knowledge_for_note("Storage")] == [stated.item_id]
    view = owner.knowledge_for_note("Emre")[0]
    assert view.item_id == about.item_id and view.source_path is None
    assert owner.knowledge_item(stated.item_id).source_path == "Notizen/Storage.md"


def test_an_agent_proposes_as_an_agent_only_and_is_told_no_card_reasons(settings):
    with Service(settings, audience=Audience.AGENT, models=ModelHolder()) as agent:
        with pytest.raises(NotAllowed):
            agent.knowledge_submit(proposal(), "owner")
        with pytest.raises(NotAllowed):
            agent.knowledge_edit(1, title="x")
        held = agent.knowledge_submit(proposal(about="Hidden Person", quote="q"), "agent:scout")
        assert held.decision == "card" and held.reason == "held for the owner's review" and held.card_id is None
        added = agent.knowledge_submit(proposal(about="Emre", quote="q"), "agent:scout")
        assert added.decision == "add" and added.item_id is not None
        assert agent.knowledge_item(added.item_id).status == "draft"
        results = agent.knowledge_ingest(['{"nope": 1}', json.dumps(proposal(title="Tea", quote="q"))], "agent:x")
        assert [r["decision"] for r in results] == ["invalid", "add"] and "schema" in results[0]["reason"]


def test_an_agent_never_sees_private_items_nor_items_of_hidden_notes(owner, settings):
    private = owner.knowledge_submit(proposal(title="Emre's salary is high", about="Emre", visibility="private"))
    hidden_about = owner.knowledge_submit(proposal(title="Someone likes tea", about="Hidden Person"))
    conn = open_database(settings.db_path)
    try:
        from_private_note = submit(conn, settings, proposal(title="Emre prefers tea"),
                                   Source.note(note_id(settings, "Notizen/Private.md"), "callout:fact:1"))
        open_item = submit(conn, settings, proposal(title="Emre likes green tea"),
                           Source.note(note_id(settings, "Notizen/Storage.md"), "callout:fact:1"))
        knowledge_store.add_source(conn, open_item.item_id, "note",
                                   note_id(settings, "Notizen/Private.md") + "#callout:fact:9", "2026-01-01")
    finally:
        conn.close()
    hidden = {private.item_id, hidden_about.item_id, from_private_note.item_id}
    assert all(d.decision == "add" for d in (private, hidden_about, from_private_note, open_item))
    assert hidden | {open_item.item_id} <= {v.item_id for v in owner.knowledge_list()}
    with Service(settings, audience=Audience.AGENT, models=ModelHolder()) as agent:
        assert [v.item_id for v in agent.knowledge_list()] == [agents_number(open_item.item_id, settings.db_path)]
        for item_id in hidden:  # named by the number an agent would know it by, or by its row id
            for told in (agents_number(item_id, settings.db_path), item_id):
                with pytest.raises(Exception, match=f"no knowledge item {told}$"):
                    agent.knowledge_item(told)
        seen = agent.knowledge_item(agents_number(open_item.item_id, settings.db_path))
        # Its corroboration from the private note is not shown; the writer's log is the owner's.
        assert seen.decisions == [] and [s["source_id"] for s in seen.sources] == [seen.source_id]
        assert len(owner.knowledge_item(open_item.item_id).sources) == 2
        found = agent.search("tea salary", SearchOptions(kind="knowledge", log=False))
        assert [r.item_id for r in found.results] == [agents_number(open_item.item_id, settings.db_path)]
    owner_found = owner.search("tea salary", SearchOptions(kind="knowledge", log=False))
    assert {r.item_id for r in owner_found.results} == hidden | {open_item.item_id}


def test_an_agent_knows_items_by_numbers_that_count_nothing(owner, settings, tmp_path):
    """Row ids count hidden items: an agent is told keyed numbers instead, in no order, with no
    gaps to read, that name the same item everywhere it is told them (list, show, search, a
    decision); a hidden item's number, or its row id, answers as a number that names nothing."""
    made = [owner.knowledge_submit(proposal(title=f"Emre kennt Fall {i:02}", about="Emre",
                                            **({"visibility": "private"} if i % 3 == 0 else {})))
            for i in range(18)]
    assert all(d.decision == "add" for d in made)
    shown = [d.item_id for i, d in enumerate(made) if i % 3]
    with Service(settings, audience=Audience.AGENT, models=ModelHolder()) as agent:
        listed = sorted(((v.title, v.item_id) for v in agent.knowledge_list(about="Emre")))
        numbers = [number for _, number in listed]  # in the order the items were made
        assert numbers == [agents_number(row, settings.db_path) for row in shown]
        assert numbers != sorted(numbers) and not set(numbers) & set(range(1, 100))
        assert agent.knowledge_item(numbers[0]).title == listed[0][0]
        found = agent.search("Fall 01", SearchOptions(kind="knowledge", mode="fts", log=False)).results
        assert [r.item_id for r in found][:1] == [numbers[0]]
        again = agent.knowledge_submit(proposal(title="Emre kennt Fall 01", about="Emre", quote="q"), "agent:scout")
        assert (again.decision, again.item_id) == ("noop", numbers[0])
        for hidden in (made[0].item_id, agents_number(made[0].item_id, settings.db_path)):
            with pytest.raises(NotFound, match=f"no knowledge item {hidden}$"):
                agent.knowledge_item(hidden)
    assert owner.knowledge_item(numbers[0]).item_id == shown[0]  # the owner may quote an agent's number
    other = open_database(tmp_path / "other.db")  # another database draws another key
    try:
        assert ItemIds.of(other).public(shown[0]) != numbers[0]
    finally:
        other.close()


def test_search_finds_items_marked_and_filters_by_kind(owner, settings):
    item = owner.knowledge_submit(proposal(type="decision", title="Postgres replaces nothing here", about="Mindtui"))
    both = owner.search("Postgres", SearchOptions(log=False))
    kinds = {(r.kind, r.item_id) for r in both.results}
    assert ("knowledge", item.item_id) in kinds and any(r.kind == "note" for r in both.results)
    marked = next(r for r in both.results if r.kind == "knowledge")
    assert marked.note_type == "decision" and marked.path == "Projekte/Mindtui.md"
    assert all(r.kind == "note" for r in owner.search("Postgres", SearchOptions(kind="notes", log=False)).results)
    only = owner.search("Postgres", SearchOptions(kind="knowledge", log=False)).results
    assert [r.item_id for r in only] == [item.item_id]
    # A note filter keeps items whose note passes it.
    assert owner.search("Postgres", SearchOptions(kind="knowledge", log=False, path="Projekte/")).results
    assert not owner.search("Postgres", SearchOptions(kind="knowledge", log=False, path="Personen/")).results
    with pytest.raises(ValueError):
        owner.search("Postgres", SearchOptions(kind="items"))


def test_a_logged_search_names_items_and_teaches_no_pairs_with_them(owner, settings):
    item = owner.knowledge_submit(proposal(title="Postgres is the other candidate", about="Mindtui"))
    owner.search("Postgres", SearchOptions(kind=None))
    conn = open_database(settings.db_path)
    try:
        results = json.loads(conn.execute("SELECT results FROM search_log ORDER BY search_id DESC").fetchone()[0])
        pairs = [row for row in conn.execute("SELECT note_a, note_b FROM search_pairs")]
    finally:
        conn.close()
    assert f"knowledge:{item.item_id}" in results
    assert all(not a.startswith("knowledge:") and not b.startswith("knowledge:") for a, b in pairs)


def test_the_sweep_embeds_current_items_and_vector_search_finds_them(settings):
    vectors = {"salmon": unit_at_cosine(0.99), "granite": unit_at_cosine(0.1)}
    fake = KeywordEmbedder(unit_at_cosine(1.0), vectors)
    holder = ModelHolder(embedder_factory=lambda s, say: fake)
    with Service(settings, audience=Audience.OWNER, models=holder) as owner:
        fish = owner.knowledge_submit(proposal(title="Emre cooks salmon on Fridays", about="Emre"))
        rock = owner.knowledge_submit(proposal(title="The office floor is granite", about="topic:Office"))
        gone = owner.knowledge_submit(proposal(title="An old salmon idea", about="topic:Food"))
        owner.knowledge_edit(gone.item_id, title="A new granite idea")
        conn = open_database(settings.db_path)
        try:
            report = run_embed_sweep(conn, fake, batch_size=4)
            have = knowledge_store.item_vectors(conn, [fish.item_id, rock.item_id, gone.item_id], fake.model_id)
            assert set(have) == {fish.item_id, rock.item_id}  # the superseded item's text is not embedded
            assert report.embedded >= 3
            again = run_embed_sweep(conn, fake, batch_size=4)
            assert again.embedded == 0 and again.removed == 0  # item vectors are no orphans
        finally:
            conn.close()
        found = owner.search("something unrelated", SearchOptions(kind="knowledge", mode="vector", log=False))
        assert [r.item_id for r in found.results][:1] == [fish.item_id]
        assert found.results[0].explain["vector"]["rank"] == 1


def test_the_writer_keeps_a_new_items_vector_when_the_model_is_loaded(settings):
    fake = DeterministicFakeEmbedder()
    holder = ModelHolder(embedder_factory=lambda s, say: fake)
    conn = open_database(settings.db_path)
    set_meta(conn, EMBEDDING_MODEL_KEY, fake.model_id)
    with Service(settings, audience=Audience.OWNER, models=holder) as owner:
        cold = owner.knowledge_submit(proposal(title="Cold start", about="Emre"))
        assert fake.calls == []  # no model was loaded: the writer never waits for one
        holder.embedder(settings)
        warm = owner.knowledge_submit(proposal(title="Warm start", about="Emre"))
    have = knowledge_store.item_vectors(conn, [cold.item_id, warm.item_id], fake.model_id)
    conn.close()
    assert set(have) == {warm.item_id}


def test_items_of_a_note_without_consent_are_never_embedded(settings):
    conn = open_database(settings.db_path)
    try:
        storage = note_id(settings, "Notizen/Storage.md")
        made = submit(conn, settings, proposal(title="Compared twice"), Source.note(storage, "callout:fact:1"))
        conn.execute("UPDATE notes SET ai_processing = 0 WHERE note_id = ?", (storage,))
        fake = DeterministicFakeEmbedder()
        run_embed_sweep(conn, fake, batch_size=8)
        assert "Compared twice" not in " ".join(fake.embedded_texts)
        assert made.decision == "add"
    finally:
        conn.close()


def test_cli_ingest_add_list_show(settings, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MINDTUI_DB", str(settings.db_path))
    lines = tmp_path / "proposals.jsonl"
    lines.write_text("\n".join([json.dumps(proposal(about="Emre", quote="sales is mine")), "{broken",
                                json.dumps({**proposal(), "schema": "knowledge_proposal.v9"}), "",
                                json.dumps(proposal(title="Mindtui is a TUI", about="Mindtui"))]), encoding="utf-8")
    assert main(["knowledge", "ingest", str(lines), "--source", "agent:scout", "--json"]) == 1
    out, err = capsys.readouterr()
    results = json.loads(out)["results"]
    assert [(r["line"], r["decision"]) for r in results] == [(1, "add"), (2, "invalid"), (3, "invalid"), (5, "card")]
    assert "line 2: invalid JSON" in err and "knowledge_proposal.v9" in err
    assert main(["knowledge", "add", "--type", "preference", "--title", "Emre prefers email", "--about", "Emre",
                 "--quote", "mail me"]) == 0
    out, _ = capsys.readouterr()
    assert out.startswith("add  item")
    assert main(["knowledge", "list", "--about", "Emre", "--json"]) == 0
    items = json.loads(capsys.readouterr()[0])["items"]
    assert {i["title"] for i in items} == {"Emre leads sales", "Emre prefers email"}
    assert main(["knowledge", "show", str(items[0]["item_id"])]) == 0
    shown = capsys.readouterr()[0]
    assert "source" in shown and "decision" in shown
    assert main(["search", "email", "--kind", "knowledge"]) == 0
    assert "[knowledge #" in capsys.readouterr()[0]
    assert main(["knowledge", "list", "--audience", "agent", "--json"]) == 0
    assert {i["title"] for i in json.loads(capsys.readouterr()[0])["items"]} == {"Emre leads sales",
                                                                                "Emre prefers email"}
    assert main(["knowledge", "show", "999"]) == 1  # no such item: not a usage error
    assert "no knowledge item 999" in capsys.readouterr()[1]


def test_cli_says_what_is_wrong_on_stderr_and_finds_items_by_topic(settings, tmp_path, capsys, monkeypatch):
    """A refused `knowledge add` says why on stderr (stdout has results only: the decision with
    --json); --about topic:TEXT lists a topic's items as --about NOTE lists a note's; a title with
    a line separator is not one line; --limit is 1 or more; an agent's reason says 'invalid' once."""
    monkeypatch.setenv("MINDTUI_DB", str(settings.db_path))
    for title in ("", "x" * 301, "zwei\u2028Zeilen", "zwei\rZeilen"):
        assert main(["knowledge", "add", "--type", "fact", "--title", title]) == 1
        out, err = capsys.readouterr()
        assert out == "" and err.startswith("mindtui: not added: title: ")
    assert main(["knowledge", "add", "--type", "fact", "--title", "", "--json"]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out)["decision"] == "invalid" and "must not be empty" in err
    for title, about in (("Der Heimrechner hat 16 GB", "topic:Heimrechner"), ("Er steht im Keller", "topic: heimrechner"),
                         ("Ein anderes Thema", "topic:Garten"), ("Emre mag Tee", "Emre")):
        assert main(["knowledge", "add", "--type", "fact", "--title", title, "--about", about, "-q"]) == 0
    capsys.readouterr()
    assert main(["knowledge", "list", "--about", "topic:HEIMRECHNER", "--json"]) == 0
    listed = json.loads(capsys.readouterr()[0])["items"]
    assert sorted(i["title"] for i in listed) == ["Der Heimrechner hat 16 GB", "Er steht im Keller"]
    assert main(["knowledge", "list", "--about", "topic:Heimrechner", "--limit", "1", "--json"]) == 0
    assert len(json.loads(capsys.readouterr()[0])["items"]) == 1
    assert main(["knowledge", "list", "--about", "topic:  "]) == 2
    assert "needs the topic's text" in capsys.readouterr()[1]
    for limit in ("0", "-1"):
        with pytest.raises(SystemExit) as exit_info:
            main(["knowledge", "list", "--limit", limit])
        assert exit_info.value.code == 2
    capsys.readouterr()
    lines = tmp_path / "agent.jsonl"
    lines.write_text(json.dumps({**proposal(title="Neu"), "supersedes": 99}), encoding="utf-8")
    assert main(["knowledge", "ingest", str(lines), "--audience", "agent"]) == 1
    out, err = capsys.readouterr()
    assert "line 1: invalid: the item it names does not exist" in out and "invalid: invalid" not in out + err


def test_an_agent_gets_items_with_links_to_hidden_notes_taken_out(owner, settings):
    made = owner.knowledge_submit(proposal(title="Emre works with [[Hidden Person]]", about="Emre",
                                           body="See [[Hidden Person]] and [[Mindtui]]."))
    with Service(settings, audience=Audience.AGENT, models=ModelHolder()) as agent:
        view = agent.knowledge_item(agents_number(made.item_id, settings.db_path))
        listed = agent.knowledge_list(about="Emre")[0]
    assert "Hidden Person" not in view.title + view.body + listed.title
    assert "[[Mindtui]]" in view.body and "[[unavailable note]]" in view.body
    assert "[[Hidden Person]]" in owner.knowledge_item(made.item_id).body
