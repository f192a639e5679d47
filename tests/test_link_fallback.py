"""A link whose target an agent may not see is, to the agent, what a later rule finds: in the
vault without that note, `[[Gleich]]` resolves by file name to `Ordner/Gleich.md` when the note
that wins by path (`Gleich.md` at the top) is private; `[[Sub2/Ziel]]` by path suffix, `[[Nah]]`
from `Top/` by file name. An agent's graph and full-text ranking must be those of the vault
without the hidden notes (note_links.fallback, store.visibility, store.anchors), through every
incremental import.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_anchor_ambiguous import WORD, agent_search, clean_import, hidden, imported_steps, note

from mindtui.audience import Audience
from mindtui.config import load_settings
from mindtui.mcp import tools
from mindtui.models.holder import ModelHolder
from mindtui.service import SearchOptions, Service
from mindtui.store import open_database
from mindtui.store.visibility import LINK_NOTES_MAX

LINKING = ("A", "B", "Top/Rel")  # the notes whose links the steps move
NAMED = ("Gleich.md", "Ziel.md", "Nah.md")  # file names of the notes they link to (no text holds WORD)
PRIVATE, NO_AI = "private: true", "ai_processing: none"


def start() -> dict[str, str]:
    """The linking lines differ in length: no two anchor rows tie in BM25 (a tie is ordered by
    row id, which tells the order of imports, not the hidden notes)."""
    return {"A.md": note("A", f"Verweis {WORD} auf [[Gleich]].\n\nSonst nichts."),
            "Gleich.md": note("Gleich", "Oben.", PRIVATE),
            "Ordner/Gleich.md": note("Gleich", "Im Ordner."),
            "Fuell.md": note("Fuell", f"Ein {WORD} und viel anderes Wetter."),
            **{f"Andere/N{n}.md": note(f"N{n}", f"Nur Text {n}.") for n in range(50)}}  # 16 deletions stay below import.max_delete_fraction


def steps() -> list[tuple[str, dict, set[str]]]:
    """(what, the files it writes (None: deletes), the NAMED notes an agent finds by WORD)."""
    gleich = "Ordner/Gleich.md"
    return [
        ("the start: the top Gleich private", {}, {gleich}),
        ("the top Gleich readable", {"Gleich.md": note("Gleich", "Oben.")}, {"Gleich.md"}),
        ("the top Gleich ai_processing: none", {"Gleich.md": note("Gleich", "Oben.", NO_AI)}, {gleich}),
        ("Ordner/Gleich private too", {gleich: note("Gleich", "Im Ordner.", PRIVATE)}, set()),
        ("Ordner/Gleich readable and a second readable one",
         {gleich: note("Gleich", "Im Ordner, offen."), "Weiter/Gleich.md": note("Gleich", "Weiter.")}, set()),
        ("the second one deleted", {"Weiter/Gleich.md": None}, {gleich}),
        ("Ordner/Gleich renamed", {gleich: None, "Neu/Gleich.md": note("Gleich", "Im Ordner, offen.")},
         {"Neu/Gleich.md"}),
        ("the top Gleich deleted", {"Gleich.md": None}, {"Neu/Gleich.md"}),
        ("the top Gleich back, private", {"Gleich.md": note("Gleich", "Wieder oben.", PRIVATE)}, {"Neu/Gleich.md"}),
        # More namesakes than a link stores (visibility.LINK_NOTES_MAX): ambiguous, as without the top one.
        ("many more readable Gleich", {f"Viele/V{n:02d}/Gleich.md": note("Gleich", f"Einer von vielen {n}.")
                                       for n in range(LINK_NOTES_MAX)}, set()),
        ("the many gone", {f"Viele/V{n:02d}/Gleich.md": None for n in range(LINK_NOTES_MAX)}, {"Neu/Gleich.md"}),
        ("B links by path, its note private", {"B.md": note("B", f"Auch {WORD} bei [[Sub2/Ziel]], mit mehr Worten im Satz."),
                                               "Sub2/Ziel.md": note("Ziel", "Genau.", PRIVATE),
                                               "X/Sub2/Ziel.md": note("Ziel", "Darunter.")},
         {"Neu/Gleich.md", "X/Sub2/Ziel.md"}),
        ("the path's note readable", {"Sub2/Ziel.md": note("Ziel", "Genau, offen.")},
         {"Neu/Gleich.md", "Sub2/Ziel.md"}),
        ("Top/Rel links by its folder, that note private", {"Top/Rel.md": note("Rel", f"Nah {WORD}: [[Nah]], ein Satz mit noch mehr Worten als der von B."),
                                                            "Top/Nah.md": note("Nah", "Nebenan.", NO_AI),
                                                            "Weit/Nah.md": note("Nah", "Weit weg.")},
         {"Neu/Gleich.md", "Sub2/Ziel.md", "Weit/Nah.md"}),
        ("the folder's note renamed away", {"Top/Nah.md": None, "Top/Fern.md": note("Fern", "Nebenan.", NO_AI)},
         {"Neu/Gleich.md", "Sub2/Ziel.md", "Weit/Nah.md"}),
        ("A private", {"A.md": note("A", f"Verweis {WORD} auf [[Gleich]].", PRIVATE)},
         {"Sub2/Ziel.md", "Weit/Nah.md"}),
        ("A readable, its line edited", {"A.md": note("A", f"Nun {WORD} anders zu [[Gleich]] hin, ganz anders als vorher.")},
         {"Neu/Gleich.md", "Sub2/Ziel.md", "Weit/Nah.md"}),
    ]


def agent_view(db: Path) -> dict:
    """What an agent reads of the linking notes: their links' rows, the edge count, their neighbours."""
    conn = open_database(db, audience=Audience.AGENT)
    try:
        paths = dict(conn.execute("SELECT note_id, path FROM notes"))
        links = [(paths[s], seq, resolution, paths.get(target)) for s, seq, resolution, target in conn.execute(
            "SELECT note_id, seq, resolution, resolved_note_id FROM note_links ORDER BY 1, 2")]
        edges = conn.execute("SELECT count(*) FROM edges").fetchone()[0]
    finally:
        conn.close()
    settings = load_settings().with_values({"db": str(db)})
    with Service(settings, audience=Audience.AGENT, models=ModelHolder()) as agent:
        neighbours = {n: tools.neighbors(agent, {"note": n}, "scout")["groups"] for n in LINKING
                      if f"{n}.md" in paths.values()}
    return {"neighbours": without_ids(neighbours), "links": links, "edges": edges}


def without_ids(value):
    """A renamed note keeps its id; the vault imported afresh gives it one from its path."""
    if isinstance(value, dict):
        return {k: without_ids(v) for k, v in value.items() if k not in ("id", "from")}
    if isinstance(value, list):
        return [without_ids(v) for v in value]
    return value


def test_a_link_to_a_hidden_note_is_to_an_agent_what_a_later_rule_finds_through_every_change(tmp_path):
    for what, files, db, found in imported_steps(tmp_path, start(), steps()):
        without = clean_import(tmp_path / "without", {p: t for p, t in files.items() if not hidden(t)})
        # Path and score: rows tied in BM25 keep their row ids' order in the full-text list (its
        # `rank`), and row ids tell the order of imports, not the hidden notes.
        seen = agent_search(db)
        assert [(path, score) for path, score, _ in seen] == [
            (path, score) for path, score, _ in agent_search(without)], what
        assert {path for path, _, _ in seen if path.rpartition("/")[2] in NAMED} == found, what
        view = agent_view(db)
        assert json.dumps(view, sort_keys=True, default=str) == json.dumps(agent_view(without), sort_keys=True,
                                                                           default=str), what
        if "A" in view["neighbours"] and found & {"Ordner/Gleich.md", "Neu/Gleich.md"}:
            assert [n["path"] for n in view["neighbours"]["A"]["links_out"]] == sorted(
                found & {"Ordner/Gleich.md", "Neu/Gleich.md"}), what


@pytest.mark.parametrize("namesake", [None, "folder2/Same.md", "Same.md"])
def test_a_note_under_the_readers_private_paths_lends_no_words_to_an_anchor_row(tmp_path, namesake):
    """Until the next import, the rows hold the lines of a note the reader's own
    privacy.private_paths hide: each row it may have lent a line to is left out, whether its
    link resolved (no namesake), was ambiguous among a readable and a private note, or resolved
    to a private note at the top with a readable one a later rule finds."""
    files = {"S.md": note("S", f"Verweis {WORD} auf [[Same]]."), "folder1/Same.md": note("Same", "Im Ordner."),
             **{f"Andere/N{n}.md": note(f"N{n}", f"Nur Text {n}.") for n in range(4)}}
    if namesake:
        files[namesake] = note("Same", "Auch.", PRIVATE)
    db = clean_import(tmp_path / "store", files)
    found = {}
    for private_paths in ([], ["S.md"]):
        settings = load_settings().with_values({"db": str(db), "privacy": {"private_paths": private_paths}})
        with Service(settings, audience=Audience.AGENT, models=ModelHolder()) as agent:
            found[bool(private_paths)] = [r.path for r in agent.search(WORD, SearchOptions(mode="fts", log=False)).results]
    assert found == {False: ["folder1/Same.md", "S.md"], True: []}


def test_a_link_to_a_note_under_the_readers_private_paths_is_what_a_later_rule_finds(tmp_path):
    """The reader's own privacy.private_paths hide the top Gleich.md before any import: its edges
    and neighbours are those of the vault without it, as for the stored flags."""
    files = {"A.md": note("A", "Verweis auf [[Gleich]]."), "Gleich.md": note("Gleich", "Oben."),
             "Ordner/Gleich.md": note("Gleich", "Im Ordner.")}
    db, without = clean_import(tmp_path / "store", files), clean_import(
        tmp_path / "without", {p: t for p, t in files.items() if p != "Gleich.md"})
    seen = {}
    for name, store, private_paths in (("hidden", db, ("Gleich.md",)), ("without", without, ())):
        conn = open_database(store, audience=Audience.AGENT, private_paths=private_paths)
        try:
            paths = dict(conn.execute("SELECT note_id, path FROM notes"))
            seen[name] = {
                "links": [(paths[s], r, paths.get(t)) for s, r, t in conn.execute(
                    "SELECT note_id, resolution, resolved_note_id FROM note_links")],
                "edges": sorted((paths[s], paths[t], kind) for s, t, kind in conn.execute(
                    "SELECT source_id, target_id, kind FROM edges WHERE scope = 'note'"))}
        finally:
            conn.close()
    assert seen["hidden"] == seen["without"]
    assert seen["hidden"]["links"] == [("A.md", "resolved", "Ordner/Gleich.md")]
    assert ("A.md", "Ordner/Gleich.md", "links_to") in seen["hidden"]["edges"]


def test_an_agents_edges_read_only_the_ambiguous_links_among_few_notes(tmp_path):
    """The partial index of migration 0020 holds LINK_NOTES_MAX as its bound: the planner takes it
    (were the two apart, every ambiguous link's candidates would be read on each edges query)."""
    files = {"A.md": note("A", "[[Same]]"), **{f"F{n}/Same.md": note("Same", str(n)) for n in range(3)}}
    conn = open_database(clean_import(tmp_path / "store", files), audience=Audience.AGENT)
    try:
        plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN SELECT count(*) FROM edges WHERE source_id = ?",
                                               ("x",))]
    finally:
        conn.close()
    assert any("note_links_ambiguous_few" in step for step in plan), plan
    assert not any("SCAN l USING INDEX note_links_ambiguous " in step + " " for step in plan)
