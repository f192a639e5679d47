"""An agent learns nothing of what it may not see, not even by its effect.

Each test builds two worlds that differ only in what is hidden from agents and compares the
bytes of what an agent gets (MCP tool results, `--audience agent --json` output, service calls
as the agent). Where hidden knowledge items are compared, the control world holds as many hidden
items that match nothing (item ids are row ids: a world without them would number the agent's
new items differently, which tells nothing). Plumbing with fakes (named so).
"""

from __future__ import annotations

import json
from pathlib import Path

from knowledge_support import write_vault

from mindtui.audience import Audience
from mindtui.cli import main
from mindtui.config import load_settings
from mindtui.knowledge import writer
from mindtui.mcp import tools
from mindtui.models.holder import ModelHolder
from mindtui.service import Service
from mindtui.store import open_database

from conftest import Vault, run_import


def dumped(data) -> str:
    return json.dumps(data, ensure_ascii=False, sort_keys=True, default=str)


def fact(title: str, about: str | None = None, **fields) -> dict:
    data = {"schema": "knowledge_proposal.v1", "type": "fact", "title": title, "quote": "said so", **fields}
    return {**data, "about": about} if about else data


# Hidden items (private) that the agent's probes below aim at, and as many hidden ones that match
# nothing, created by the same sources in the same order (same ids, same statuses).
PROBED = [(fact("Emre plays the cello", "Emre", visibility="private"), "owner"),
          (fact("Emre drinks coffee", "Emre", visibility="private"), "agent:other"),  # a hidden draft
          (fact("Emre plays the violin in the city orchestra every Friday", "Emre", visibility="private"), "owner"),
          ({**fact("We host the index on our own server", "Mindtui", visibility="private"), "type": "decision"},
           "owner")]
UNRELATED = [(fact("The garden needs water", "topic:Garden", visibility="private"), "owner"),
             (fact("The roses bloom", "topic:Garden", visibility="private"), "agent:other"),
             (fact("Tomatoes ripen in August", "topic:Garden", visibility="private"), "owner"),
             ({**fact("We water in the morning", "topic:Garden", visibility="private"), "type": "decision"}, "owner")]
HIDDEN_DRAFT = 3
PROBES = [
    fact("Emre plays the cello", "Emre"),  # an exact copy of a hidden item
    fact("Emre drinks tea", "Emre", supersedes=HIDDEN_DRAFT),  # ends a hidden draft?
    fact("Emre drinks tea", "Emre", supersedes=9999),  # ... answers as for an item that does not exist
    fact("Emre plays the violin in the city orchestra every Sunday", "Emre"),  # near a hidden item
    {**fact("We host the index on Hetzner", "Mindtui"), "type": "decision"},  # says otherwise than a hidden one
    fact("Emre leads sales", "Emre"),  # a visible item: known already (the probes can tell)
]


def proposal_world(root: Path, hidden: list) -> tuple[Service, Path]:
    """A vault with one visible item (1) and the hidden ones (2-5); the owner's service."""
    vault = Vault(root / "vault")
    write_vault(vault)
    db = root / "mindtui.db"
    run_import(db, vault.root)
    settings = load_settings().with_values({"db": str(db)})
    owner = Service(settings, audience=Audience.OWNER, models=ModelHolder())
    decisions = [owner.knowledge_submit(fact("Emre leads sales", "Emre"), "owner")]
    decisions += [owner.knowledge_submit(p, source) for p, source in hidden]
    assert [(d.decision, d.item_id) for d in decisions] == [("add", n) for n in range(1, len(hidden) + 2)]
    return owner, db


def check_hidden_items_untouched(owner: Service) -> None:
    for item_id in range(2, 6):
        item = owner.knowledge_item(item_id)
        assert item.is_current, item
        assert [s["source_id"] for s in item.sources] in (["owner"], ["agent:other"])
        assert [d["decision"] for d in item.decisions] == ["add"]
    assert owner.knowledge_item(HIDDEN_DRAFT).status == "draft"
    assert owner.curation_list(kind="duplicate") == [] and owner.curation_list(kind="contradiction") == []


def test_an_agents_ingested_proposals_answer_alike_whatever_is_hidden(tmp_path, capsys):
    """`knowledge ingest --audience agent --json`: the same bytes against the probed hidden items
    as against unrelated ones; the hidden items are not ended, corroborated or carded."""
    outputs = {}
    for name, hidden in (("probed", PROBED), ("unrelated", UNRELATED)):
        owner, db = proposal_world(tmp_path / name, hidden)
        lines = tmp_path / name / "proposals.jsonl"
        lines.write_text("\n".join(json.dumps(p) for p in PROBES) + '\n{"nope": 1}\n', encoding="utf-8")
        capsys.readouterr()
        main(["knowledge", "ingest", str(lines), "--db", str(db), "--audience", "agent", "--json"])
        outputs[name] = capsys.readouterr().out
        if name == "probed":
            check_hidden_items_untouched(owner)
        owner.close()
    assert outputs["probed"] == outputs["unrelated"]
    results = json.loads(outputs["probed"])["results"]
    assert [r["decision"] for r in results] == ["add", "invalid", "invalid", "add", "add", "noop", "invalid"]
    assert {k: v for k, v in results[1].items() if k != "line"} == {k: v for k, v in results[2].items() if k != "line"}
    assert results[5]["reason"] == "known already" and results[5]["item_id"] == 1
    assert "schema" in results[6]["reason"]  # the validator's message: it depends on the line alone


def test_an_agents_mcp_proposals_answer_alike_whatever_is_hidden(tmp_path):
    outputs = {}
    for name, hidden in (("probed", PROBED), ("unrelated", UNRELATED)):
        owner, db = proposal_world(tmp_path / name, hidden)
        with Service(owner.settings, audience=Audience.AGENT, models=ModelHolder()) as agent:
            outputs[name] = [dumped(tools.propose_knowledge(agent, {k: v for k, v in p.items() if k != "schema"},
                                                             "scout")) for p in PROBES]
        if name == "probed":
            check_hidden_items_untouched(owner)
        owner.close()
    assert outputs["probed"] == outputs["unrelated"]


def test_an_owner_handing_in_an_agents_proposal_does_not_corroborate_a_hidden_item(tmp_path):
    """An agent's proposal is decided on what an agent may see, whoever hands it in."""
    owner, _ = proposal_world(tmp_path, PROBED)
    decision = owner.knowledge_submit(PROBES[0], "agent:scout")
    assert decision.decision == "add" and decision.item_id == 6
    check_hidden_items_untouched(owner)
    owner.close()


def test_a_visible_item_superseded_by_a_hidden_one_is_just_ended_to_an_agent(tmp_path, monkeypatch):
    monkeypatch.setattr(writer, "now_iso", lambda: "2026-11-30T12:00:00+00:00")
    outputs = {}
    for name in ("hidden successor", "ended"):
        owner, _ = proposal_world(tmp_path / name, [])
        if name == "hidden successor":
            assert owner.knowledge_edit(1, title="Emre leads sales and marketing", visibility="private").item_id == 2
        else:
            conn = open_database(owner.settings.db_path)
            writer.retire(conn, 1, "retracted")
            conn.close()
            owner.knowledge_submit(fact("The garden needs water", "topic:Garden", visibility="private"), "owner")
        with Service(owner.settings, audience=Audience.AGENT, models=ModelHolder()) as agent:
            outputs[name] = dumped({
                "item": agent.knowledge_item(1).as_dict(),
                "list": [v.as_dict() for v in agent.knowledge_list(current_only=False)],
                "mcp": tools.knowledge_search(agent, {"status": "superseded"}, "scout"),
                "counts": {k: v for k, v in agent.status().items() if k.startswith("knowledge_")}})
        owner.close()
    assert outputs["hidden successor"] == outputs["ended"]
    assert json.loads(outputs["ended"])["item"]["superseded_by"] is None
