"""Knowledge items an agent may see are decided and consolidated as if the hidden notes did not exist.

A knowledge callout in a private note that states what a visible note's callout states must not
swallow the visible item (the writer took the later callout as the same statement), confirm it
(two independent sources) or end it (an exact duplicate). Each test compares what an agent gets
in a world whose private note states the same with one whose private note states something else
(item ids are row ids: the control world has as many hidden items, in the same order).
"""

from __future__ import annotations

import json

import pytest
from test_agent_privacy import dumped

from mindtui.audience import Audience
from mindtui.config import load_settings
from mindtui.mcp import tools
from mindtui.models.holder import ModelHolder
from mindtui.service import SearchOptions, Service

from conftest import Vault, share_item_key

VISIBLE_CALLOUT = "> [!fact] Der Server steht im Keller\n> about: topic: Haus\n"
SAME = VISIBLE_CALLOUT
OTHER = "> [!fact] Die Katze schläft im Korb\n> about: topic: Garten\n"


def agent_knowledge(root, hidden_first: bool, hidden_callout: str) -> str:
    """A visible and a private note with a callout each (note ids decide which the import
    proposes first); two nightly runs of import and consolidation; what an agent gets."""
    vault = Vault(root / "vault")
    first, last = ("a", "z") if hidden_first else ("z", "a")
    vault.write("Start.md", f"---\nid: {last}-start\n---\n# Start\n\n{VISIBLE_CALLOUT}")
    vault.write("Geheim.md", f"---\nid: {first}-geheim\nprivate: true\n---\n# Geheim\n\n{hidden_callout}")
    settings = load_settings().with_values({"db": str(root / "mindtui.db")})
    with Service(settings, audience=Audience.OWNER, models=ModelHolder()) as owner:
        for _ in range(2):
            assert owner.run_job("nightly", steps=["import", "consolidate"], vault=vault.root).ok
    share_item_key(settings.db_path)
    with Service(settings, audience=Audience.AGENT, models=ModelHolder()) as agent:
        items = tools.knowledge_search(agent, {"limit": 50}, "scout")["items"]
        found = agent.search("Server Keller", SearchOptions(mode="fts", kind="knowledge", log=False))
        counts = {k: v for k, v in agent.status().items() if k.startswith("knowledge_")}
    for item in items:
        item.pop("valid_from")  # the clock at import
    return dumped({"items": items, "found": [r.item_id for r in found.results], "counts": counts})


@pytest.mark.parametrize("hidden_first", [True, False])
def test_a_private_notes_callout_neither_swallows_nor_confirms_a_visible_notes(tmp_path, hidden_first):
    probed = agent_knowledge(tmp_path / "same", hidden_first, SAME)
    assert probed == agent_knowledge(tmp_path / "other", hidden_first, OTHER)
    items = json.loads(probed)["items"]
    assert [(i["title"], i["status"], i["source_path"]) for i in items] == [
        ("Der Server steht im Keller", "draft", "Start.md")]


def test_the_owner_still_finds_the_private_notes_statement(tmp_path):
    """The owner sees both: the visible item and the private note's own (not merged into one)."""
    agent_knowledge(tmp_path, True, SAME)
    settings = load_settings().with_values({"db": str(tmp_path / "mindtui.db")})
    with Service(settings, audience=Audience.OWNER, models=ModelHolder()) as owner:
        items = sorted((i.source_path, i.status) for i in owner.knowledge_list())
    assert items == [("Geheim.md", "draft"), ("Start.md", "draft")]


def namesake_knowledge(root, hidden_namesake: bool) -> str:
    """A visible note's callout about [[Emre]], a visible person Personen/Emre.md and, with
    `hidden_namesake`, a private person of the same file name: what an agent gets."""
    vault = Vault(root / "vault")
    vault.write("Personen/Emre.md", "---\ntype: person\n---\n# Emre\n\nKollege.\n")
    if hidden_namesake:
        vault.write("Privat/Emre.md", "---\ntype: person\nprivate: true\n---\n# Emre\n\nJemand anderes.\n")
    vault.write("Projekte/Alpha.md", "# Alpha\n\n> [!decision] Wir verwenden SQLite\n> about: [[Emre]]\n"
                                     "> Eine Datei reicht.\n")
    settings = load_settings().with_values({"db": str(root / "mindtui.db")})
    with Service(settings, audience=Audience.OWNER, models=ModelHolder()) as owner:
        assert owner.run_job("nightly", steps=["import", "consolidate"], vault=vault.root).ok
    share_item_key(settings.db_path)
    with Service(settings, audience=Audience.AGENT, models=ModelHolder()) as agent:
        items = tools.knowledge_search(agent, {"limit": 50}, "scout")["items"]
        counts = {k: v for k, v in agent.status().items() if k.startswith("knowledge_")}
    for item in items:
        item.pop("valid_from")
    return dumped({"items": items, "counts": counts})


def test_a_hidden_namesake_does_not_keep_a_visible_notes_callout_from_its_subject(tmp_path):
    """[[Emre]] names two people by file name, one of them private: to an agent the visible
    note's item is what it would be without the private one (about the visible Emre), not a
    card the ambiguity made (which left the agent without the item)."""
    probed = namesake_knowledge(tmp_path / "hidden", True)
    assert probed == namesake_knowledge(tmp_path / "alone", False)
    items = json.loads(probed)["items"]
    assert [(i["title"], i["source_path"]) for i in items] == [("Wir verwenden SQLite", "Projekte/Alpha.md")]
