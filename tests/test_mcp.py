"""`mindtui mcp`: the server driven by the official SDK's own client over stdio.

Every test starts `python -m mindtui mcp --db ...` as a child process through the SDK's stdio
client (the way an editor or a coding assistant does) on the sample vault imported without
vectors. The embedding model is configured to a missing file, so searches answer from full text
with a notice, the same in the CLI and in MCP (the ranking parity test depends on it).
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import asynccontextmanager

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import Implementation
from e5_tokens import real_token_count
from tui_support import build_fixed_db

from mindtui.audience import Audience
from mindtui.cli import main
from mindtui.config import load_settings
from mindtui.service import Service
from mindtui.service.context import dumps, tokens_of

from conftest import REPO, agents_number, embed_with_fake, run_import

AGENT_NAME = "test-agent"
ALL_TOOLS = {"search", "neighbors", "get_note", "knowledge_search", "context_pack"}


@pytest.fixture
def no_model(tmp_path, monkeypatch):
    monkeypatch.setenv("MINDTUI_MODELS__EMBEDDING_PATH", str(tmp_path / "absent.gguf"))


@pytest.fixture
def fixed_db(sample_vault, db_path, no_model):
    build_fixed_db(sample_vault.root, db_path)
    return db_path


@asynccontextmanager
async def serving(db, *extra: str):
    params = StdioServerParameters(command=sys.executable, args=["-m", "mindtui", "mcp", "--db", str(db), *extra],
                                   env=dict(os.environ), cwd=str(REPO))
    async with Client(params, read_timeout_seconds=120,
                      client_info=Implementation(name=AGENT_NAME, version="1.0")) as client:
        yield client


async def call(client, name: str, arguments: dict | None = None) -> tuple[bool, dict]:
    """(is_error, the result's JSON): the text content and the structured content agree."""
    result = await client.call_tool(name, arguments or {})
    data = json.loads(result.content[0].text)
    assert result.structured_content == data
    return result.is_error, data


async def ok(client, name: str, arguments: dict | None = None) -> dict:
    is_error, data = await call(client, name, arguments)
    assert not is_error, data
    return data


async def test_every_tool_answers_with_compact_json(fixed_db):
    async with serving(fixed_db) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(listed) == ALL_TOOLS  # read-only: no propose_knowledge
        for tool in listed.values():
            assert len(tool.description) > 80 and tool.input_schema["type"] == "object"
            assert tool.input_schema["additionalProperties"] is False
        found = await ok(client, "search", {"query": "SQLite", "limit": 3})
        assert found["results"][0]["path"] == "Konzepte/SQLite.md" and len(found["results"]) <= 3
        assert any("full-text" in notice for notice in found["notices"])  # no model: said, not hidden
        assert set(found["results"][0]) >= {"id", "kind", "path", "title", "score", "snippet"}
        typed = await ok(client, "search", {"query": "SQLite", "filters": {"type": "project"}, "kind": "notes"})
        assert typed["results"] and {r["type"] for r in typed["results"]} == {"project"}

        note = await ok(client, "get_note", {"note": "SQLite", "chunks": True})
        assert note["text"].startswith("---\n") and "# SQLite" in note["text"]  # the file, frontmatter included
        assert note["chunks"][0]["seq"] == 0 and note["chunks"][0]["text"]
        assert "chunks" not in await ok(client, "get_note", {"note": "Konzepte/SQLite.md"})

        near = await ok(client, "neighbors", {"note": "SQLite", "signals": ["relations"]})
        assert set(near["groups"]) == {"relations"}
        assert {"BM25", "Vektorsuche"} <= {n["title"] for n in near["groups"]["relations"]}

        items = await ok(client, "knowledge_search", {})
        assert items["items"] and all(item["status"] != "superseded" for item in items["items"])
        decisions = await ok(client, "knowledge_search", {"query": "SQLite", "type": "decision"})
        assert decisions["items"] and {i["type"] for i in decisions["items"]} == {"decision"}
        assert "SQLite" in decisions["items"][0]["title"] and decisions["items"][0]["score"] > 0

        pack = await ok(client, "context_pack", {"query": "SQLite", "budget_tokens": 600})
        assert pack["used_tokens"] <= 600 and pack["notes"][0]["path"] == "Konzepte/SQLite.md"
        big = await ok(client, "context_pack", {"note": "Heimautomation", "budget_tokens": 4000})
        assert big["notes"][0]["title"] == "Heimautomation" and big["notes"][0]["text"]
        assert "SQLite" in {n["title"] for n in big["notes"][0]["neighbours"]}


async def test_bad_arguments_are_clear_errors_and_the_server_keeps_serving(fixed_db):
    async with serving(fixed_db) as client:
        cases = [
            ("search", {}, "bad_arguments", "'query' is a required property"),
            ("search", {"query": 3}, "bad_arguments", "query: 3 is not of type 'string'"),
            ("search", {"query": "x", "limit": 500}, "bad_arguments", "limit"),
            ("search", {"query": "x", "mode": "psychic"}, "bad_arguments", "mode"),
            ("search", {"query": "x", "colour": "red"}, "bad_arguments", "colour"),
            ("neighbors", {"note": "SQLite", "signals": ["gossip"]}, "bad_arguments", "gossip"),
            ("get_note", {"note": "No such note anywhere"}, "not_found", "No such note anywhere"),
            ("get_note", {"note": "Notizen"}, "ambiguous", "give the vault path"),  # Inbox/ and Projekte/ have it
            ("context_pack", {"note": "SQLite", "query": "x"}, "bad_arguments", "exactly one of"),
            ("context_pack", {}, "bad_arguments", "exactly one of"),
            ("context_pack", {"query": "x", "budget_tokens": 10}, "bad_arguments", "budget_tokens"),
            ("propose_knowledge", {"type": "fact", "title": "x"}, "unknown_tool", "--allow-proposals"),
            ("launch_rockets", {}, "unknown_tool", "tools: search"),
        ]
        for name, arguments, kind, words in cases:
            is_error, data = await call(client, name, arguments)
            assert is_error and data["error"] == kind and words in data["message"], (name, arguments, data)
            assert (await ok(client, "search", {"query": "SQLite", "limit": 1}))["results"]  # still serving


@pytest.mark.parametrize("mode", ["hybrid", "fts"])
async def test_the_cli_and_mcp_rank_the_same(fixed_db, capsys, mode):
    queries = ["SQLite", "Suche im Heimnetz", "Entscheidung Datenbank", "was ist BM25?"]
    expected = []
    for query in queries:
        assert main(["search", query, "--db", str(fixed_db), "--json", "--audience", "agent", "--mode", mode,
                     "--limit", "8", "-q"]) == 0
        expected.append([r["note_id"] for r in json.loads(capsys.readouterr().out)["results"]])
    assert any(expected)
    async with serving(fixed_db) as client:
        for query, ids in zip(queries, expected):
            found = await ok(client, "search", {"query": query, "mode": mode, "limit": 8})
            assert [r["id"] for r in found["results"]] == ids, query


HIDDEN = ("Geheim", "Tagebuch", "Ohne KI", "Unklar", "Gehaltszahl", "Krankenakte")


@pytest.fixture
def privacy_db(vault, db_path, no_model, monkeypatch):
    monkeypatch.setenv("MINDTUI_PRIVACY__PRIVATE_PATHS", "[Privat/**]")
    vault.write("Geheim.md", "---\nprivate: true\n---\n# Geheim\nZitronenbaum: die Gehaltszahl. [[Offen]]\n\n"
                             "> [!fact] Die Gehaltszahl steht im Zitronenbaum-Ordner\n")
    vault.write("Privat/Tagebuch.md", "Heute den Zitronenbaum gegossen. [[Offen]]\n")
    vault.write("Ohne KI.md", "---\nai_processing: none\n---\nDer Zitronenbaum und die Krankenakte. [[Offen]]\n")
    vault.write("Unklar.md", "---\nai_processing: vielleicht\n---\nZitronenbaum, unklar markiert.\n")
    vault.write("Offen.md", "Ein Zitronenbaum im Garten. [[Geheim]] [[Ohne KI]]\n")
    run_import(db_path, vault.root)
    with Service(load_settings().with_overrides(db=str(db_path)), audience=Audience.OWNER) as owner:
        secret = owner.knowledge_submit({"schema": "knowledge_proposal.v1", "type": "fact", "visibility": "private",
                                         "title": "Die Gehaltszahl liegt beim Zitronenbaum", "about": "topic:Geld"})
        assert secret.decision == "add" and owner.knowledge_item(secret.item_id).visibility == "private"
    return db_path


async def test_private_and_no_ai_notes_never_come_out(privacy_db):
    async with serving(privacy_db, "--allow-proposals") as client:
        outputs = []
        for query in ("Zitronenbaum", "Geheim Gehaltszahl", "Ohne KI Krankenakte", "Tagebuch"):
            for mode in ("hybrid", "fts"):
                found = await ok(client, "search", {"query": query, "mode": mode, "limit": 20})
                outputs.append(found)
            outputs.append(await ok(client, "knowledge_search", {"query": query}))
            pack = await ok(client, "context_pack", {"query": query, "budget_tokens": 4000})
            assert pack.pop("seed") == {"query": query}  # the only place the query's words may come back
            outputs.append(pack)
        assert [r["path"] for r in outputs[0]["results"]] == ["Offen.md"]
        outputs.append(await ok(client, "neighbors", {"note": "Offen"}))
        outputs.append(await ok(client, "get_note", {"note": "Offen", "chunks": True}))
        outputs.append(await ok(client, "context_pack", {"note": "Offen", "budget_tokens": 4000}))
        outputs.append(await ok(client, "knowledge_search", {}))
        for name in ("Geheim", "Geheim.md", "Privat/Tagebuch.md", "Tagebuch", "Ohne KI", "Ohne KI.md", "Unklar"):
            for tool, arguments in (("get_note", {"note": name}), ("neighbors", {"note": name}),
                                    ("context_pack", {"note": name})):
                is_error, data = await call(client, tool, arguments)
                assert is_error and data["error"] == "not_found", (tool, name, data)
        text = json.dumps(outputs, ensure_ascii=False)
        assert "Zitronenbaum" in text  # the open note is there...
        assert not [word for word in HIDDEN if word in text]  # ...nothing of the hidden ones
    # the control: the same tools over an owner's service (in process) do show the hidden notes and items
    from mindtui.mcp.server import build_server

    with Service(load_settings().with_overrides(db=str(privacy_db)), audience=Audience.OWNER) as owner:
        async with Client(build_server(owner)) as client:
            found = await ok(client, "search", {"query": "Zitronenbaum", "mode": "fts", "limit": 20})
            items = await ok(client, "knowledge_search", {})
    assert {"Geheim.md", "Ohne KI.md", "Privat/Tagebuch.md"} <= {r.get("path") for r in found["results"]}
    assert "Gehaltszahl" in json.dumps(items, ensure_ascii=False)


async def test_proposals_round_trip_into_the_curation_queue(fixed_db):
    async with serving(fixed_db, "--allow-proposals") as client:
        assert "propose_knowledge" in {tool.name for tool in (await client.list_tools()).tools}
        # an agent's proposal without a quote is held for the owner (knowledge.quote_required_for)
        held = await ok(client, "propose_knowledge", {"type": "fact", "title": "Die Wärmepumpe läuft mit 45 Grad",
                                                      "about": "Heimautomation"})
        assert held["decision"] == "card" and held["source"] == f"agent:{AGENT_NAME}"
        added = await ok(client, "propose_knowledge", {"type": "fact", "title": "Der Router steht im Flur",
                                                       "quote": "Router im Flur", "about": "Heimautomation"})
        assert added["decision"] == "add" and added["item_id"]
        is_error, data = await call(client, "propose_knowledge", {"type": "rumour", "title": "x"})
        assert is_error and data["error"] == "bad_arguments" and "type" in data["message"]
    settings = load_settings().with_overrides(db=str(fixed_db))
    with Service(settings, audience=Audience.OWNER) as owner:
        cards = [card for card in owner.curation_list("missing_quote")
                 if card.as_dict()["payload"]["source"]["id"] == f"agent:{AGENT_NAME}"]
        assert len(cards) == 1
        assert held["card_id"] is None  # a row id: it counts the owner's whole queue
        item = next(v for v in owner.knowledge_list() if v.title == "Der Router steht im Flur")
        assert (item.status, item.source_id) == ("draft", f"agent:{AGENT_NAME}")
        assert added["item_id"] == agents_number(item.item_id, fixed_db) != item.item_id  # not its row id


def test_context_pack_keeps_to_the_budget(fixed_db):
    settings = load_settings().with_overrides(db=str(fixed_db))
    with Service(settings, audience=Audience.OWNER) as owner:  # the owner as source: confirmed at once
        added = owner.knowledge_submit({"schema": "knowledge_proposal.v1", "type": "fact",
                                        "title": "Das Heimnetz hat einen eigenen DNS-Server", "about": "Heimautomation"})
        assert added.decision == "add", added
    with Service(settings, audience=Audience.AGENT) as agent:
        pack = agent.context_pack(note="Heimautomation", budget_tokens=3000)
        assert "Das Heimnetz hat einen eigenen DNS-Server" in [k["title"] for k in pack["notes"][0]["knowledge"]]
        sizes = []
        for budget in (200, 400, 800, 1600, 3200, 12800):
            pack = agent.context_pack(query="SQLite Suche", budget_tokens=budget)
            assert pack["used_tokens"] == tokens_of(pack) <= budget, budget
            assert real_token_count(dumps(pack)) <= budget, budget  # what the agent's model reads
            sizes.append(sum(len(n.get("text", "")) for n in pack["notes"]))
        assert sizes == sorted(sizes) and sizes[-1] > sizes[2] > 0  # 200 and 400 may hold only the map
        whole = agent.context_pack(query="SQLite Suche", budget_tokens=100_000)
        assert not any(n.get("truncated") for n in whole["notes"]) and whole["omitted"]["text"] == 0


async def test_a_search_while_the_model_loads_answers_from_full_text(fixed_db):
    """In process (the SDK's client on the server object): the model's load is held until the test
    lets it go, so 'before ready' is a fact, not a race."""
    import threading

    import anyio
    from fakes import DeterministicFakeEmbedder

    from mindtui.mcp.server import build_server
    from mindtui.models.holder import ModelHolder

    release = threading.Event()

    def slow_model(settings, say):
        assert release.wait(60)
        return DeterministicFakeEmbedder()

    holder = ModelHolder(embedder_factory=slow_model)
    embed_with_fake(fixed_db)
    settings = load_settings().with_overrides(db=str(fixed_db))
    with Service(settings, audience=Audience.AGENT, models=holder) as agent:
        agent.preload_models()
        async with Client(build_server(agent)) as client:
            early = await ok(client, "search", {"query": "SQLite"})
            assert early["results"][0]["path"] == "Konzepte/SQLite.md"
            assert any("loading" in notice for notice in early["notices"])
            release.set()
            await anyio.to_thread.run_sync(lambda: holder.embedder(settings))  # the load has finished
            later = await ok(client, "search", {"query": "SQLite"})
            assert not any("loading" in notice for notice in later.get("notices", []))


def test_no_database_no_server(tmp_path, capsys):
    assert main(["mcp", "--db", str(tmp_path / "missing.db")]) == 4
    assert "no database here" in capsys.readouterr().err
    assert main(["--audience", "agent", "mcp", "--db", str(tmp_path / "missing.db")]) == 2  # always agent: no flag


async def test_a_read_only_database_is_served_and_a_proposal_says_why(fixed_db, monkeypatch):
    monkeypatch.setenv("MINDTUI_DATABASE__READ_ONLY", "true")
    before = fixed_db.read_bytes()
    async with serving(fixed_db, "--allow-proposals") as client:
        found = await ok(client, "search", {"query": "SQLite"})
        assert found["results"][0]["path"] == "Konzepte/SQLite.md"
        assert (await ok(client, "get_note", {"note": "Konzepte/SQLite.md"}))["path"] == "Konzepte/SQLite.md"
        is_error, data = await call(client, "propose_knowledge", {"type": "fact", "title": "Der Router steht im Flur",
                                                                  "quote": "Router im Flur", "about": "Heimautomation"})
        assert is_error and data["error"] == "failed" and "read-only" in data["message"]
    assert fixed_db.read_bytes() == before
