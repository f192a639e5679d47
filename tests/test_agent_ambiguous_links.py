"""A link that only a hidden note makes ambiguous is, to an agent, the link it would be without
that note: resolved to the one visible candidate, with the edges the importer gives a resolved
link (explicit, the type's defaults, one edge for repeats). Each test compares what an agent gets
from a vault with the hidden namesake and from the same vault without it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mindtui.audience import Audience
from mindtui.config import load_settings
from mindtui.mcp import tools
from mindtui.models.holder import ModelHolder
from mindtui.service import SearchOptions, Service
from mindtui.store import open_database
from mindtui.store.edges import reference_edges_sql

from conftest import Vault, run_import

EDGE_COLUMNS = "kind, scope, source_id, target_id, owner_note_id, provenance, rule_id, confidence, signal, weight, evidence"

NOTES = ("A", "C", "D", "folder1/Same", "Zwei", "Top/Sub/Eigen")
# A links [[Same]] only (a concept: its type adds related_to); C links [[Same]] and, later,
# [[folder1/Same]] (one edge, weight 2, the first line's evidence), D the other way round (and is
# a suggestion for A by their shared link); Top/Sub/Eigen links [[Sub/Eigen]] (itself); Zwei links
# [[Liste]], which two visible notes bear.
VISIBLE = {
    "A.md": "---\ntype: concept\nrelated: \"[[Same]]\"\n---\n# A\n\nkwalpha steht hier.\n\nVerweis auf [[Same]].\n",
    "C.md": "# C\n\nErst [[Same]] im Satz.\n\nDann [[folder1/Same]] genau.\n",
    "D.md": "# D\n\nErst [[folder1/Same]] genau.\n\nDann [[Same]] im Satz.\n",
    "folder1/Same.md": "# Same\n",
    "Top/Sub/Eigen.md": "# Eigen\n\nIch selbst: [[Sub/Eigen]].\n",
    "Projekte/Liste.md": "# Liste\n",
    "Notizen/Liste.md": "# Liste\n",
    "Zwei.md": "# Zwei\n\nSiehe [[Liste]].\n",
}
# Hidden namesakes (the frontmatter flag goes in front), one linking A.
HIDDEN = {"folder2/Same.md": "# Same\n\nkwalpha geheim, [[A]].\n", "Andere/Sub/Eigen.md": "# Eigen\n",
          "Privat/Liste.md": "# Liste\n"}


def world(root: Path, hidden_flag: str | None) -> Service:
    """The VISIBLE notes, and with `hidden_flag` the HIDDEN ones; the owner's service."""
    if root.exists():
        shutil.rmtree(root)
    vault = Vault(root / "vault")
    for path, text in VISIBLE.items():
        vault.write(path, text)
    for path, text in HIDDEN.items() if hidden_flag else ():
        vault.write(path, f"---\n{hidden_flag}\n---\n{text}")
    settings = load_settings().with_values({"db": str(root / "mindtui.db")})
    owner = Service(settings, audience=Audience.OWNER, models=ModelHolder())
    result = owner.run_job("nightly", steps=["import", "graph"], vault=vault.root)
    assert result.ok, result.as_dict()
    return owner


def agent_edges(db: Path) -> list[tuple]:
    """Every edge an agent's connection reads (edge_id is a row id: left out)."""
    conn = open_database(db, audience=Audience.AGENT)
    try:
        return conn.execute(f"SELECT {EDGE_COLUMNS} FROM edges ORDER BY 3, 4, 1, 7").fetchall()
    finally:
        conn.close()


def agent_answers(settings) -> dict:
    with Service(settings, audience=Audience.AGENT, models=ModelHolder()) as agent:
        search = agent.search("kwalpha", SearchOptions(mode="fts", log=False, expand=True))  # the graph lends too
        return {"neighbours": {n: tools.neighbors(agent, {"note": n}, "scout") for n in NOTES},
                "graph": agent.graph_stats(),
                # The scores too: the link's line is in the visible target's anchor row (store.anchors).
                "search": [(r.path, r.score, r.explain.get("graph")) for r in search.results],
                "edges": agent_edges(settings.db_path)}


@pytest.mark.parametrize("hidden_flag", ["private: true", "ai_processing: none"])
def test_a_link_ambiguous_only_through_a_hidden_note_gives_an_agent_the_graph_without_it(tmp_path, hidden_flag):
    answers = {}
    for name, flag in (("hidden", hidden_flag), ("without", None)):
        owner = world(tmp_path / name, flag)
        with owner:
            a = owner.neighbours("A").groups
            # The owner sees the links to Same and Sub/Eigen as ambiguous (and Zwei's): no edge from A.
            assert owner.status()["ambiguous_total"] == (6 if flag else 1)
            if flag:
                assert not (a["links_out"] or a["relations"] or a["type_defaults"])
        answers[name] = agent_answers(owner.settings)
    dumped = {name: json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
              for name, value in answers.items()}
    assert dumped["hidden"] == dumped["without"]

    seen = answers["hidden"]
    a = seen["neighbours"]["A"]["groups"]
    assert [n["path"] for n in a["links_out"]] == ["folder1/Same.md"]
    assert [(n["path"], n["kind"]) for n in a["relations"]] == [("folder1/Same.md", "related_to")]
    assert [n["path"] for n in a["type_defaults"]] == ["folder1/Same.md"]
    assert sorted(n["path"] for n in a["suggestions"]) == ["C.md", "D.md"]  # they share folder1/Same with A
    ids = {view["note"]["path"]: view["note"]["id"] for view in seen["neighbours"].values()}
    for source in ("C.md", "D.md"):  # [[Same]] and [[folder1/Same]]: one edge, the first line's evidence
        to_same = [e[9:] for e in seen["edges"] if e[2:4] == (ids[source], ids["folder1/Same.md"])]
        assert to_same == [(2.0, "Erst [[Same]] im Satz." if source == "C.md" else "Erst [[folder1/Same]] genau.")]
    assert all(e[2] != e[3] for e in seen["edges"])  # [[Sub/Eigen]] in Top/Sub/Eigen is itself: no edge
    assert not seen["neighbours"]["Zwei"]["groups"].get("links_out")  # two visible Liste: still ambiguous
    assert [(path, graph) for path, _, graph in seen["search"][:2]] == [
        ("A.md", None), ("folder1/Same.md", {"from": [seen["neighbours"]["A"]["note"]["id"]]})]


def test_the_sql_derives_from_resolved_links_the_reference_edges_the_importer_stores(tmp_path, monkeypatch):
    """The agent's view derives a resolved link's edges in SQL (store.edges.reference_edges_sql):
    over a store's own links it gives the stored explicit and type-default edges, row for row
    (repeats, a type the registry does not know, one with no defaults, a frontmatter relation)."""
    types = tmp_path / "types.yaml"
    types.write_text("default_type: zettel\ntypes:\n  zettel: {edge_defaults: [mentions, Knows About]}\n"
                     "  concept: {edge_defaults: [related_to]}\n  plain: {}\n", encoding="utf-8")
    monkeypatch.setenv("MINDTUI_TYPES_FILE", str(types))
    vault = Vault(tmp_path / "vault")
    for path, text in {"Z.md": "# Z\n\n[[B]] und [[C]].\n\nNochmal [[B]] und [[Z]].\n",
                       "K.md": "---\ntype: concept\nrelated: \"[[B]]\"\n---\n# K\n\n[[B]] und [[C|c]].\n",
                       "U.md": "---\ntype: quatsch\n---\n# U\n\n[[B]] [[Fehlt]]\n",
                       "P.md": "---\ntype: plain\n---\n# P\n\n[[B]]\n", "B.md": "# B\n\n[[C]]\n", "C.md": "# C\n"}.items():
        vault.write(path, text)
    db = tmp_path / "mindtui.db"
    run_import(db, vault.root)
    conn = open_database(db)
    try:
        stored = conn.execute(f"SELECT {EDGE_COLUMNS} FROM edges WHERE provenance IN ('explicit', 'rule')"
                              " ORDER BY 3, 4, 1, 7").fetchall()
        derived = conn.execute(f"SELECT {EDGE_COLUMNS} FROM ({reference_edges_sql('main.note_links')})"
                               " ORDER BY 3, 4, 1, 7").fetchall()
    finally:
        conn.close()
    assert derived == stored
    assert {(row[6], row[9]) for row in stored if row[5] == "rule"} >= {
        ("edge_defaults:zettel:knows_about", 2.0), ("edge_defaults:quatsch:mentions", 1.0),
        ("edge_defaults:concept:related_to", 1.0)}
