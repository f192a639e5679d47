"""An agent learns nothing of what it may not see, not even by its effect.

Each test builds two worlds that differ only in what is hidden from agents and compares the
bytes of what an agent gets (MCP tool results, `--audience agent --json` output, service calls
as the agent). Where hidden knowledge items are compared, the control world holds as many hidden
items that match nothing (item ids are row ids: a world without them would number the agent's
new items differently, which tells nothing). Plumbing with fakes (named so).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
from fakes import DeterministicFakeEmbedder, KeywordEmbedder, unit_at_cosine
from knowledge_support import write_vault

from mindtui.audience import Audience
from mindtui.cli import main
from mindtui.config import load_settings
from mindtui.knowledge import writer
from mindtui.mcp import tools
from mindtui.models.holder import ModelHolder
from mindtui.models.sweep import run_embed_sweep
from mindtui.service import SearchOptions, Service
from mindtui.store import open_database
from mindtui.store import vectors as vector_store

from conftest import Vault, agents_number, run_import, share_item_key


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
    fact("Emre drinks tea", "Emre", supersedes=agents_number(HIDDEN_DRAFT)),  # ends a hidden draft, named as an agent would?
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
    share_item_key(db)
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
    assert results[5]["reason"] == "known already" and results[5]["item_id"] == agents_number(1)
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
                "item": agent.knowledge_item(agents_number(1)).as_dict(),
                "list": [v.as_dict() for v in agent.knowledge_list(current_only=False)],
                "mcp": tools.knowledge_search(agent, {"status": "superseded"}, "scout"),
                "counts": {k: v for k, v in agent.status().items() if k.startswith("knowledge_")}})
        owner.close()
    assert outputs["hidden successor"] == outputs["ended"]
    assert json.loads(outputs["ended"])["item"]["superseded_by"] is None


WORK_LOG = """| Datum | Sitzung | Notizen |
|---|---|---|
| 2026-11-01 | S1 | [[Alpha]], [[Beta]] |
"""
PRIVATE_LOG = """---
private: true
---
| Datum | Sitzung | Notizen |
|---|---|---|
| 2026-11-02 | P1 | [[Alpha]], [[Gamma]] |
| 2026-11-03 | P2 | [[Alpha]], [[Beta]] |
"""


def graph_world(root: Path, hidden_logs: bool) -> Settings:
    """Three visible notes and an open work log; with hidden_logs a private work log and one in an
    excluded folder (outside the index: its privacy is unknown) pair them too."""
    if root.exists():
        shutil.rmtree(root)
    vault = Vault(root / "vault")
    for name in ("Alpha", "Beta", "Gamma"):
        vault.write(f"{name}.md", f"# {name}\n\nAbout {name}.\n")
    vault.write("Journal/Arbeitslog.md", WORK_LOG, dedent=False)
    if hidden_logs:
        vault.write("Privat/Arbeitslog.md", PRIVATE_LOG, dedent=False)
        vault.write("Archiv/Arbeitslog.md", WORK_LOG.replace("S1 | [[Alpha]], [[Beta]]", "A1 | [[Beta]], [[Gamma]]"),
                    dedent=False)
    settings = load_settings().with_values({"db": str(root / "mindtui.db"), "import": {"exclude": ["Archiv/**"]}})
    with Service(settings, audience=Audience.OWNER, models=ModelHolder()) as owner:
        result = owner.run_job("nightly", steps=["import", "graph"], vault=vault.root)
        assert result.ok, result.as_dict()
    return settings


def agent_graph_outputs(settings) -> str:
    with Service(settings, audience=Audience.AGENT, models=ModelHolder()) as agent:
        return dumped({note: tools.neighbors(agent, {"note": note}, "scout") for note in ("Alpha", "Beta", "Gamma")}
                      | {"stats": agent.graph_stats()})


def test_a_hidden_work_log_gives_an_agent_no_change_neighbours(tmp_path):
    root = tmp_path / "world"
    with_hidden = graph_world(root, hidden_logs=True)
    with Service(with_hidden, audience=Audience.OWNER, models=ModelHolder()) as owner:
        change = {n.title: n for n in owner.neighbours("Alpha").groups["change"]}
    # The owner sees every log's sessions: Beta from the open and the private log, Gamma from the private one.
    assert {t: n.weight for t, n in change.items()} == {"Beta": 2.0, "Gamma": 1.0}
    assert "S1" in change["Beta"].evidence and "P2" in change["Beta"].evidence
    seen = agent_graph_outputs(with_hidden)
    assert agent_graph_outputs(graph_world(root, hidden_logs=False)) == seen
    alpha = json.loads(seen)["Alpha"]["groups"]["change"]
    assert [(n["title"], n["weight"]) for n in alpha] == [("Beta", 1.0)]


def test_rewriting_a_work_log_keeps_its_change_edges_until_the_graph_is_built_again(tmp_path):
    settings = graph_world(tmp_path / "world", hidden_logs=False)
    log = tmp_path / "world" / "vault" / "Journal" / "Arbeitslog.md"
    log.write_text(WORK_LOG + "| 2026-11-04 | S2 | [[Gamma]] |\n", encoding="utf-8")
    run_import(settings.db_path, log.parents[1])
    with Service(settings, audience=Audience.OWNER, models=ModelHolder()) as owner:
        assert [n.title for n in owner.neighbours("Alpha").groups["change"]] == ["Beta"]
    with Service(settings, audience=Audience.AGENT, models=ModelHolder()) as agent:
        assert [n.title for n in agent.neighbours("Alpha").groups["change"]] == ["Beta"]


CORPUS_COUNTS = ("notes_total", "chunks_total", "unresolved_total", "missing_total", "ambiguous_total",
                 "out_of_corpus_total", "attachment_links_total", "knowledge_current")


def test_links_made_ambiguous_or_resolved_by_hidden_notes_count_for_an_agent_as_without_them(tmp_path, capsys):
    root = tmp_path / "world"
    outputs = {}
    for hidden in (True, False):
        if root.exists():
            shutil.rmtree(root)
        vault = Vault(root / "vault")
        vault.write("Projekte/Plan.md", "# Plan\n")
        vault.write("Projekte/Liste.md", "# Liste\n")
        vault.write("Notizen/Liste.md", "# Liste\n")
        # Plan: one visible note and a hidden one; Liste: two visible and a hidden one; Geheim,
        # Doppelt: only hidden notes.
        vault.write("Start.md", "[[Plan]] [[Liste]] [[Geheim]] [[Doppelt]] [[Fehlt]]\n")
        if hidden:
            vault.write("Privat/Plan.md", "---\nprivate: true\n---\n# Plan\n")
            vault.write("Privat/Liste.md", "---\nprivate: true\n---\n# Liste\n")
            vault.write("Geheim.md", "---\nai_processing: none\n---\n# Geheim\n")
            vault.write("Privat/Doppelt.md", "---\nprivate: true\n---\n# Doppelt\n")
            vault.write("Tresor/Doppelt.md", "---\nprivate: true\n---\n# Doppelt\n")
        db = root / "mindtui.db"
        run_import(db, vault.root)
        capsys.readouterr()
        assert main(["status", "--db", str(db), "--audience", "agent", "--json"]) == 0
        status = json.loads(capsys.readouterr().out)
        outputs[hidden] = dumped({k: status[k] for k in CORPUS_COUNTS})
    assert outputs[True] == outputs[False]
    counts = json.loads(outputs[True])
    assert (counts["ambiguous_total"], counts["missing_total"]) == (1, 3)


def vector_world(root: Path, crowd: int):
    """Five open notes at cosines 0.9 .. 0.5 to every query and `crowd` private notes at 0.99."""
    if root.exists():
        shutil.rmtree(root)
    vault = Vault(root / "vault")
    table = {}
    for n in range(5):
        vault.write(f"Offen {n}.md", f"# Offen {n}\n\nkwopen{n} im Garten.\n")
        table[f"kwopen{n}"] = unit_at_cosine(0.9 - 0.1 * n)
    for n in range(crowd):
        vault.write(f"Akte {n}.md", f"---\nprivate: true\n---\n# Akte {n}\n\nkwhidden im Garten.\n")
    table["kwhidden"] = unit_at_cosine(0.99)
    fake = KeywordEmbedder(unit_at_cosine(1.0), table)
    holder = ModelHolder(embedder_factory=lambda settings, say: fake)
    settings = load_settings().with_values({"db": str(root / "mindtui.db"), "search": {"candidate_pool": 3}})
    with Service(settings, audience=Audience.OWNER, models=holder) as owner:
        result = owner.run_job("nightly", steps=["import", "embed"], vault=vault.root)
        assert result.ok, result.as_dict()
    return settings, holder


def test_private_notes_crowding_the_query_leave_an_agents_vector_list_full(tmp_path):
    root = tmp_path / "world"
    outputs = {}
    for crowd in (40, 0):
        settings, holder = vector_world(root, crowd)
        with Service(settings, audience=Audience.AGENT, models=holder) as agent:
            response = agent.search("Garten", SearchOptions(mode="vector", log=False, limit=3))  # pool 3
            # chunk_id is a row id: the private notes, imported first, shift it (as hidden items
            # shift item ids); it is the one field left out.
            outputs[crowd] = dumped(tools.search(agent, {"query": "Garten", "mode": "vector"}, "scout")) + dumped(
                [{k: v for k, v in r.as_dict().items() if k != "chunk_id"} for r in response.results])
            found = [r.path for r in response.results]
    assert outputs[40] == outputs[0]
    assert found == ["Offen 0.md", "Offen 1.md", "Offen 2.md"]


def test_knowledge_items_near_a_note_do_not_crowd_out_its_suggestions(vault, db_path):
    """Forty items whose vectors lie nearer than any note: the note close in meaning is suggested."""
    vault.write("Idee.md", "# Idee\n\nkwidea.\n")
    vault.write("Verwandt.md", "# Verwandt\n\nkwnear.\n")
    table = {"kwidea": unit_at_cosine(1.0), "kwnear": unit_at_cosine(0.9), "kwitem": unit_at_cosine(0.99)}
    fake = KeywordEmbedder(unit_at_cosine(1.0), table)
    holder = ModelHolder(embedder_factory=lambda settings, say: fake)
    # Two suggestions: the KNN of each chunk asks for 2 * 4 + 8 = 16 neighbours at first.
    settings = load_settings().with_values({"db": str(db_path), "graph": {"suggestions": 2}})
    with Service(settings, audience=Audience.OWNER, models=holder) as owner:
        assert owner.run_job("nightly", steps=["import"], vault=vault.root).ok
        for n in range(40):
            assert owner.knowledge_submit(fact(f"kwitem number {n}", f"topic:t{n}"), "owner").decision == "add"
        assert owner.run_job("nightly", steps=["embed"], vault=vault.root).ok
        suggested = [n.title for n in owner.neighbours("Idee").groups["suggestions"]]
    assert suggested == ["Verwandt"]
    with Service(settings, audience=Audience.AGENT, models=holder) as agent:
        assert [n.title for n in agent.neighbours("Idee").groups["suggestions"]] == ["Verwandt"]


def test_the_refilled_knn_stops_when_the_index_is_exhausted(db_path):
    vector = np.ones(384, dtype=np.float32)
    conn = open_database(db_path)
    try:
        with conn:
            vector_store.insert_vectors(conn, "m", ["a", "b", "c"], np.stack([vector, vector, -vector]))
        asked = []
        hits = vector_store.knn_refilled(conn, vector, 1, lambda hits: asked.append(len(hits)) and False,
                                         ("SELECT embedding_id FROM embeddings", ()))
        assert len(hits) == 3 and asked == [1, 1, 2, 3]
    finally:
        conn.close()


def imported_and_embedded(vault, db_path, meta: dict[str, str] | None = None) -> DeterministicFakeEmbedder:
    """The vault imported and embedded by the fake embedder, then `meta` set; the embedder."""
    from mindtui.store.meta import set_meta

    run_import(db_path, vault.root)
    fake = DeterministicFakeEmbedder()
    conn = open_database(db_path)
    try:
        run_embed_sweep(conn, fake, batch_size=16)
        with conn:
            for key, value in (meta or {}).items():
                set_meta(conn, key, value)
    finally:
        conn.close()
    return fake


def test_an_agents_search_and_status_tell_nothing_of_the_owners_log_or_the_embedding_backlog(vault, db_path):
    """No search log row id (it counts the owner's searches), no learnt settings (fitted to the
    owner's opens), no backlog of passages to embed (it counts hidden notes' chunks)."""
    from mindtui.store.meta import EMBED_REMAINING_KEY

    vault.write("Offen.md", "# Offen\n\nGarten und Beete.\n")
    vault.write("Geheim.md", "---\nprivate: true\n---\n# Geheim\n\nGarten hinter dem Haus.\n")
    fake = imported_and_embedded(vault, db_path, {EMBED_REMAINING_KEY: "7"})  # as a sweep stopped by its budget leaves it
    settings = load_settings().with_values({"db": str(db_path), "search": {"min_cosine": -1.0}})
    holder = ModelHolder(embedder_factory=lambda settings, say: fake)
    with Service(settings, audience=Audience.OWNER, models=holder) as owner:
        mine = owner.search("Garten", SearchOptions())
        assert mine.search_id is not None and any("7 passages" in n for n in mine.notices)
        assert "learnt_settings" in owner.status()
    with Service(settings, audience=Audience.AGENT, models=holder) as agent:
        theirs = agent.search("Garten", SearchOptions())
        assert theirs.search_id is None and not any("passages" in n for n in theirs.notices)
        assert "learnt_settings" not in agent.status()


def id_world(root: Path, hidden: bool, private_paths: list[str]) -> tuple[Vault, Settings]:
    """A visible note declaring id `proj-01`; with `hidden`, three hidden notes sorted before it
    declare it too (private, ai_processing: none, and one in a folder of privacy.private_paths)."""
    if root.exists():
        shutil.rmtree(root)
    vault = Vault(root / "vault")
    vault.write("Projekt.md", "---\nid: proj-01\n---\n# Projekt\n\nDas Projekt.\n")
    if hidden:
        vault.write("Akte.md", "---\nid: proj-01\nprivate: true\n---\n# Akte\n")
        vault.write("Geheim.md", "---\nid: proj-01\nai_processing: none\n---\n# Geheim\n")
        if private_paths:
            vault.write("Archiv/Alt.md", "---\nid: proj-01\n---\n# Alt\n")
    settings = load_settings().with_values({"db": str(root / "mindtui.db"),
                                            "privacy": {"private_paths": private_paths}})
    return vault, settings


def agent_sees_id(settings) -> str:
    with Service(settings, audience=Audience.AGENT, models=ModelHolder()) as agent:
        return dumped(tools.get_note(agent, {"note": "proj-01"}, "scout"))


def test_a_hidden_note_never_takes_a_visible_notes_frontmatter_id(tmp_path):
    """A visible note keeps its declared id when hidden notes declare it too (else an agent finds
    it under another id, and `proj-01` says 'no note'), on a first import and when the visible
    note that held it takes another id and a new one declares it while the hidden ones are unchanged."""
    root = tmp_path / "world"
    for private_paths in ([], ["Archiv/**"]):
        outputs = {}
        for hidden in (True, False):
            vault, settings = id_world(root, hidden, private_paths)
            with Service(settings, audience=Audience.OWNER, models=ModelHolder()) as owner:
                assert owner.run_job("nightly", steps=["import"], vault=vault.root).ok
            first = agent_sees_id(settings)
            vault.write("Projekt.md", "---\nid: proj-02\n---\n# Projekt\n\nDas Projekt.\n")
            vault.write("Zettel/Projekt.md", "---\nid: proj-01\n---\n# Projekt neu\n\nEin anderer Text.\n")
            with Service(settings, audience=Audience.OWNER, models=ModelHolder()) as owner:
                assert owner.run_job("nightly", steps=["import"], vault=vault.root).ok
            outputs[hidden] = (first, agent_sees_id(settings))
        assert outputs[True] == outputs[False], private_paths
        assert json.loads(outputs[True][1])["path"] == "Zettel/Projekt.md"


def test_an_agent_is_told_no_card_number_that_counts_cards_hidden_notes_decide(tmp_path):
    """A visible note's links to hidden notes resolve for the owner: without the hidden notes each
    would be an unresolved_link card, so the number of the card an agent's proposal gets moved."""
    outputs = {}
    for hidden in (True, False):
        root = tmp_path / ("hidden" if hidden else "plain")
        vault = Vault(root / "vault")
        vault.write("Start.md", "# Start\n\n[[Tresor]] [[Akte]] [[Kasse]]\n")
        if hidden:
            for name in ("Tresor", "Akte", "Kasse"):
                vault.write(f"Privat/{name}.md", f"---\nprivate: true\n---\n# {name}\n")
        settings = load_settings().with_values({"db": str(root / "mindtui.db")})
        with Service(settings, audience=Audience.OWNER, models=ModelHolder()) as owner:
            assert owner.run_job("nightly", steps=["import"], vault=vault.root).ok
            cards = len(owner.curation_list(kind="unresolved_link"))
        with Service(settings, audience=Audience.AGENT, models=ModelHolder()) as agent:
            outputs[hidden] = dumped([tools.propose_knowledge(agent, {"type": "fact", "title": "Etwas", "about": about},
                                                              "scout") for about in ("Niemand", "Start")])
        assert cards == (0 if hidden else 3)
    assert outputs[True] == outputs[False]
    assert [d["decision"] for d in json.loads(outputs[True])] == ["card", "card"]


def test_an_agent_never_searches_with_values_fitted_to_the_owners_opens(vault, db_path):
    """The nightly fits search settings to the owner's opens, private notes' among them: even with
    privacy.agent_uses_history an agent's ranking is the shipped one, while the owner's moves."""
    from mindtui.store.meta import set_meta

    for name, text in [("Offen", "Garten und Beete im Sommer."), ("Holz", "Hochbeete aus Holz, Garten."),
                       ("Laube", "Eine Laube im Garten, Beete davor, Beete dahinter."),
                       ("Kompost", "Kompost für Beete."), ("Zaun", "Ein Zaun um den Garten.")]:
        vault.write(f"{name}.md", f"# {name}\n\n{text}\n")
    vault.write("Geheim.md", "---\nprivate: true\n---\n# Geheim\n\nGarten hinter dem Haus.\n")
    fake = imported_and_embedded(vault, db_path)
    settings = load_settings().with_values({"db": str(db_path), "search": {"min_cosine": -1.0},
                                            "privacy": {"agent_uses_history": True}})
    holder = ModelHolder(embedder_factory=lambda settings, say: fake)

    def scores(audience: Audience) -> dict[str, float]:
        with Service(settings, audience=audience, models=holder) as service:
            results = service.search("Garten Beete", SearchOptions(log=False)).results
        return {r.path: r.score for r in results}

    before = {audience: scores(audience) for audience in (Audience.OWNER, Audience.AGENT)}
    conn = open_database(db_path)
    try:
        with conn:  # what a nightly fit adopts
            set_meta(conn, "search_learnt", json.dumps({"values": {"convex_alpha": 0.05}}))
    finally:
        conn.close()
    assert scores(Audience.OWNER) != before[Audience.OWNER]
    assert scores(Audience.AGENT) == before[Audience.AGENT]


def namesake_log_world(root: Path, hidden_namesake: bool) -> Settings:
    """The open work log pairs Alpha with [[Beta]]; with hidden_namesake a private Privat/Beta.md
    makes that name ambiguous by file name."""
    vault = Vault(root / "vault")
    for name in ("Alpha", "Projekte/Beta", "Gamma"):
        vault.write(f"{name}.md", f"# {name.rpartition('/')[2]}\n\nAbout it.\n")
    if hidden_namesake:
        vault.write("Privat/Beta.md", "---\nprivate: true\n---\n# Beta\n\nSomeone else.\n")
    vault.write("Journal/Arbeitslog.md", WORK_LOG, dedent=False)
    settings = load_settings().with_values({"db": str(root / "mindtui.db")})
    with Service(settings, audience=Audience.OWNER, models=ModelHolder()) as owner:
        assert owner.run_job("nightly", steps=["import", "graph"], vault=vault.root).ok
    return settings


def test_a_hidden_namesake_takes_no_session_from_a_visible_note(tmp_path):
    seen = agent_graph_outputs(namesake_log_world(tmp_path / "hidden", True))
    assert agent_graph_outputs(namesake_log_world(tmp_path / "alone", False)) == seen
    alpha = json.loads(seen)["Alpha"]["groups"]["change"]
    assert [(n["title"], n["weight"]) for n in alpha] == [("Beta", 1.0)]
