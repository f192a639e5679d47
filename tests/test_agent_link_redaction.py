"""A link an agent reads tells nothing of a hidden note: to it, a link to a private note and a link
to no note are the same `[[unavailable note]]` (service.redact), in a note's text, frontmatter,
headings and snippets and in a knowledge item alike, so the vault with the private note and the
vault without it read byte for byte the same. Whether a name is a visible note's is looked up
in the note names' index as the vault is now (store.names.is_visible_name).
"""

from __future__ import annotations

import json

from knowledge_support import proposal

from mindtui.audience import Audience
from mindtui.config import load_settings
from mindtui.models.holder import ModelHolder
from mindtui.service import SearchOptions, Service

from conftest import Vault, agents_number, run_import

START = ('---\nrelated: ["[[Geheim]]", "[[Plan]]"]\n---\n# Start\n\n## Siehe [[Geheim]]\n\n'
         "Pomeranze: siehe [[Geheim|das Gespräch]], [[Nirgends]], [[Plan]] und [Notiz](Geheim.md).\n")


def service(db, audience: Audience) -> Service:
    return Service(load_settings().with_overrides(db=str(db)), audience=audience, models=ModelHolder())


def agent_reads(root, private_note: bool) -> str:
    vault = Vault(root / "vault")
    vault.write("Start.md", START)
    vault.write("Plan.md", "# Plan\n\nDer Plan.\n")
    if private_note:
        vault.write("Geheim.md", "---\nprivate: true\n---\n# Geheim\n\nGehalt.\n")
    db = root / "mindtui.db"
    run_import(db, vault.root)
    with service(db, Audience.OWNER) as owner:
        item = owner.knowledge_submit(proposal(about="topic:Planung", title="Plan mit [[Geheim]]",
                                               body="Siehe [[Geheim]], [[Nirgends]] und [[Plan]]."), "owner")
    assert item.decision == "add", item
    with service(db, Audience.AGENT) as agent:
        note = agent.note("Start", with_chunks=True).as_dict()
        note.pop("indexed_at")  # the clock at import
        view = agent.knowledge_item(agents_number(item.item_id, db))
        return json.dumps({
            "note": note, "item": [view.title, view.body],
            "snippets": [r.snippet for r in agent.search("Pomeranze", SearchOptions(mode="fts", log=False)).results],
        }, ensure_ascii=False, sort_keys=True)


def test_a_link_to_a_private_note_reads_as_a_link_to_no_note(tmp_path):
    shown = {hidden: agent_reads(tmp_path / str(hidden), hidden) for hidden in (True, False)}
    assert shown[True] == shown[False]
    assert "Geheim" not in shown[True] and "Nirgends" not in shown[True]
    read = json.loads(shown[True])
    assert read["note"]["frontmatter"]["related"] == ["[[unavailable note]]", "[[Plan]]"]
    assert "## Siehe [[unavailable note]]" in read["note"]["text"]
    assert read["item"] == ["Plan mit [[unavailable note]]", "Siehe [[unavailable note]], [[unavailable note]] und [[Plan]]."]
    assert any("Pomeranze: siehe [[unavailable note]], [[unavailable note]], [[Plan]]" in s for s in read["snippets"])


def test_the_names_an_agent_may_read_follow_the_vault(vault, db_path):
    """One agent service, the vault changing under it: a link stands while a note it sees bears
    the name, by title, alias, path or a suffix of the path."""
    vault.write("Start.md", "# Start\n\nSiehe [[Nirgends]], [[Plan]], [[B/Tief]] und [[Alias Name]].\n")
    vault.write("Plan.md", "# Plan\n\nDer Plan.\n")
    vault.write("A/B/Tief.md", "---\naliases: [Alias Name]\n---\n# Tief\n")
    run_import(db_path, vault.root)
    with service(db_path, Audience.AGENT) as agent:
        assert "Siehe [[unavailable note]], [[Plan]], [[B/Tief]] und [[Alias Name]]." in agent.note("Start").text

        vault.write("Nirgends.md", "# Nirgends\n\nJetzt gibt es sie.\n")
        run_import(db_path, vault.root)
        assert "Siehe [[Nirgends]], [[Plan]]" in agent.note("Start").text

        vault.write("Nirgends.md", "---\nprivate: true\n---\n# Nirgends\n\nJetzt privat.\n")
        vault.write("A/B/Tief.md", "---\nprivate: true\naliases: [Alias Name]\n---\n# Tief\n")
        vault.rename("Plan.md", "Projekt.md")
        run_import(db_path, vault.root)
        assert "Siehe [[unavailable note]], [[unavailable note]], [[unavailable note]] und [[unavailable note]]." in (
            agent.note("Start").text)
