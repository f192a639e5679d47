"""An agent's full-text ranking, counts and links are what they would be without the notes it
may not see (the project rule: not a hidden note's text, nor its existence, nor its effect).

Each test builds two worlds that differ only in hidden notes and compares the bytes of what an
agent gets through the MCP tools and the service. BM25 weighs a word by how many rows hold it
among all rows: hidden rows that hold a query word, counted, would lower that word's weight and
reorder (and rescore) the visible notes. Plumbing with the deterministic fake embedder.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from fakes import DeterministicFakeEmbedder
from test_agent_privacy import PROBED, UNRELATED, fact, proposal_world

from mindtui.audience import Audience
from mindtui.config import load_settings
from mindtui.mcp import tools
from mindtui.models.holder import ModelHolder
from mindtui.models.sweep import run_embed_sweep
from mindtui.service import SearchOptions, Service
from mindtui.search.query import parse_query
from mindtui.store import open_database
from mindtui.store import knowledge_store, search_store, visible_rank

from conftest import Vault, run_import

QUERY = "Apfel Birne"
FILLER = ["Wetter", "Fahrrad", "Kaffee", "Regal", "Zug", "Wolke", "Brief", "Lampe"]


def _dumped(data) -> str:
    return json.dumps(data, ensure_ascii=False, sort_keys=True, default=str)


def ranking_world(root: Path, hidden: bool) -> Path:
    """Two visible notes the query matches (Obst: "Apfel" twice; Markt: "Birne" once), visible
    filler, and (hidden=True) hidden notes full of "Apfel" of every kind: private, `ai_processing:
    none`, in a folder only the reader's privacy.private_paths hides, and one only linked to (its
    anchor-text row holds the linking line's words) and long. Hidden files sort first: their chunks take
    the low row ids."""
    if root.exists():
        shutil.rmtree(root)
    vault = Vault(root / "vault")
    if hidden:
        for n in range(3):
            vault.write(f"A-Privat/Apfel{n}.md", f"---\nprivate: true\n---\n# Sorte {n}\n\nApfel und Apfel.\n")
        vault.write("A-Ohne-KI/Apfelkuchen.md", "---\nai_processing: none\n---\n# Kuchen\n\nApfel Apfel Apfel.\n")
        vault.write("A-Spaeter/Apfelbaum.md", "# Baum\n\nApfel am Baum.\n")
        # One chunk of 200 words: its length is a docsize varint of two bytes (big-endian, once read
        # the other way round).
        rows = " ".join(["ab"] * 200)
        vault.write("A-Privat/Ernte.md", f"---\nprivate: true\n---\n# Ernte\n\nViel Arbeit: {rows}.\n")
    vault.write("Obst.md", "# Obst\n\nEin Apfel, noch ein Apfel, dazu etwas Wetter.\n")
    vault.write("Markt.md", "# Markt\n\nEine Birne vom Markt und etwas Wetter.\n")
    # A visible line naming the query word links to the hidden Ernte (missing to the agent); in
    # the frontmatter, which no answer below shows (text would show the link redacted).
    vault.write("Garten.md", '---\napfel: "[[Ernte]]"\n---\n# Garten\n\nBeete.\n')
    vault.write("Korb.md", '---\nbirne: "[[Markt]]"\n---\n# Korb\n\nGeflochten.\n')  # Markt's anchor row
    for word in FILLER:
        vault.write(f"{word}.md", f"# {word}\n\nNur {word} und sonst nichts.\n")
    db = root / "mindtui.db"
    run_import(db, vault.root)
    conn = open_database(db)
    try:
        run_embed_sweep(conn, DeterministicFakeEmbedder(), batch_size=16)
    finally:
        conn.close()
    return db


def _agent(db: Path) -> Service:
    fake = DeterministicFakeEmbedder()
    settings = load_settings().with_values({"db": str(db), "privacy": {"private_paths": ["A-Spaeter/**"]},
                                            "search": {"min_cosine": -1.0}})
    return Service(settings, audience=Audience.AGENT, models=ModelHolder(embedder_factory=lambda s, say: fake))


def _agent_answers(db: Path) -> dict:
    with _agent(db) as agent:
        agent.search(QUERY, SearchOptions(wait_for_model=True, log=False))  # the tools do not wait for it
        return {"fts": tools.search(agent, {"query": QUERY, "mode": "fts"}, "test"),
                "hybrid": tools.search(agent, {"query": QUERY}, "test"),
                "filtered": tools.search(agent, {"query": QUERY, "mode": "fts", "filters": {"type": "note"}}, "test"),
                "pack": tools.context_pack(agent, {"query": QUERY}, "test"),
                "count": agent.search_count(QUERY, SearchOptions(mode="fts"))}


def test_hidden_notes_holding_the_query_words_move_no_visible_note_in_an_agents_ranking(tmp_path):
    answers = {hidden: _agent_answers(ranking_world(tmp_path / "world", hidden)) for hidden in (True, False)}
    assert _dumped(answers[True]) == _dumped(answers[False])
    assert [r["path"] for r in answers[False]["fts"]["results"]] == ["Obst.md", "Markt.md"]
    assert answers[False]["count"] == 2


def test_the_owner_ranks_with_every_note(tmp_path):
    """The hidden rows do weigh in the world the test above compares: for the owner, who sees
    them, they lower the weight of "Apfel" below that of "Birne" (and the owner's ranking stays FTS5's)."""
    db = ranking_world(tmp_path / "world", hidden=True)
    with Service(load_settings().with_values({"db": str(db)}), audience=Audience.OWNER, models=ModelHolder()) as owner:
        found = [r.path for r in owner.search(QUERY, SearchOptions(mode="fts", log=False)).results]
    assert found.index("Markt.md") < found.index("Obst.md")


def _raw_scores(db: Path, audience: Audience, private_paths: tuple[str, ...] = ()) -> list[tuple[str, float]]:
    """(note path, bm25 score) of the query's full-text hits as the store ranks them."""
    conn = open_database(db, audience=audience, private_paths=private_paths)
    try:
        hits = search_store.fts_chunks(conn, parse_query(QUERY).fts, 50, restricted=audience is Audience.AGENT)
        paths = dict(conn.execute("SELECT note_id, path FROM notes"))
        return [(paths[hit.note_id], hit.score) for hit in hits]
    finally:
        conn.close()


def test_an_agents_bm25_is_fts5s_over_the_rows_it_sees(tmp_path):
    """The scores themselves: with nothing hidden, the agent's are FTS5's bm25 (the owner's); with
    hidden notes, each one is what it is in the world without them, to the last bit."""
    plain = ranking_world(tmp_path / "plain", hidden=False)
    owner, agent = _raw_scores(plain, Audience.OWNER), _raw_scores(plain, Audience.AGENT)
    assert [path for path, _ in agent] == [path for path, _ in owner] and len(agent) == 3  # Markt's anchor row too
    assert agent == owner
    conn = open_database(plain, audience=Audience.AGENT)
    try:  # nothing hidden: the agent's ranking is bm25 itself, and so would its own formula be
        both = conn.execute(f"SELECT bm25(chunks_fts, 5, 3, 1), {visible_rank.VISIBLE_BM25}(chunks_fts, 5, 3, 1)"
                            " FROM chunks_fts WHERE chunks_fts MATCH ?", (parse_query(QUERY).fts,)).fetchall()
    finally:
        conn.close()
    assert len(both) == 3 and all(fts5 == ours for fts5, ours in both)
    hidden = ranking_world(tmp_path / "hidden", hidden=True)
    assert _raw_scores(hidden, Audience.AGENT, ("A-Spaeter/**",)) == agent


def test_an_agent_gets_no_row_id_or_count_that_counts_hidden_rows(tmp_path):
    """Chunk ids are row ids: hidden notes imported first would number the visible chunks higher.
    Counts (status, the status line's summary, a search's "20 of N") are the visible rows'."""
    outputs = {}
    for hidden in (True, False):
        db = ranking_world(tmp_path / "world", hidden)
        with _agent(db) as agent:
            note = agent.note("Obst").as_dict()
            note.pop("indexed_at")  # the clock at import
            status = {k: v for k, v in agent.status().items() if k not in ("db", "vault", "models", "recent_runs")}
            outputs[hidden] = _dumped({
                "search": agent.search(QUERY, SearchOptions(mode="fts", log=False)).as_dict(),
                "hybrid": agent.search(QUERY, SearchOptions(wait_for_model=True, log=False)).as_dict(),
                "note": note, "status": status, "summary": agent.summary(),
                "count": agent.search_count(QUERY), "filtered": agent.search_count(QUERY, SearchOptions(note_type="note"))})
    assert outputs[True] == outputs[False]
    found = json.loads(outputs[False])
    assert found["note"]["chunks"][0]["chunk_id"] is None and found["count"] == 2


def test_a_link_by_a_name_a_hidden_note_shares_is_the_visible_notes_to_an_agent(tmp_path):
    """[[Plan]] means the visible Projekte/Plan to an agent, whether or not a hidden Privat/Plan
    exists: its text and evidence show it as written. A link only a hidden note answers is
    redacted, as it is when no note answers it (the vault without the hidden note)."""
    shown = {}
    for hidden in (True, False):
        root = tmp_path / "world"
        if root.exists():
            shutil.rmtree(root)
        vault = Vault(root / "vault")
        vault.write("Projekte/Plan.md", "# Plan\n\nDer Plan.\n")
        vault.write("Start.md", "# Start\n\nSiehe [[Plan]] und [[Projekte/Plan|den Plan]] oder [[Privat/Plan]].\n")
        if hidden:
            vault.write("Privat/Plan.md", "---\nprivate: true\n---\n# Plan\n\nGeheim.\n")
        run_import(root / "mindtui.db", vault.root)
        with _agent(root / "mindtui.db") as agent:
            shown[hidden] = _dumped({"text": agent.note("Start").text,
                                     "evidence": [n["evidence"] for n in tools.neighbors(
                                         agent, {"note": "Plan"}, "test")["groups"]["backlinks"]],
                                     "snippet": [r.snippet for r in agent.search("Siehe", SearchOptions(
                                         mode="fts", log=False)).results if r.path == "Start.md"]})
    redacted = "Siehe [[Plan]] und [[Projekte/Plan|den Plan]] oder [[unavailable note]]."
    assert json.loads(shown[True]) == {"text": f"# Start\n\n{redacted}\n", "evidence": [redacted], "snippet": [redacted]}
    assert shown[False] == shown[True]  # without the private note the link reaches no note: redacted all the same


def test_hidden_knowledge_items_move_no_visible_item_in_an_agents_ranking(tmp_path):
    """Private items holding the query's words (the control world holds as many that match
    nothing: item ids are row ids) change neither the order nor the BM25 of the agent's items."""
    outputs = {}
    for hidden, items in ((True, PROBED), (False, UNRELATED)):
        owner, db = proposal_world(tmp_path / str(hidden), items)
        for title in ("Emre plays football on Sundays", "Emre plays chess and sings in the choir"):
            assert owner.knowledge_submit(fact(title, "Emre"), "owner").decision == "add"
        owner.close()
        with _agent(db) as agent:
            found = tools.knowledge_search(agent, {"query": "Emre plays sings"}, "test")
        for item in found["items"]:
            item.pop("valid_from")  # the clock when the world was built
        conn = open_database(db, audience=Audience.AGENT)
        try:
            raw = knowledge_store.fts_items(conn, parse_query("Emre plays sings").fts, 20)
        finally:
            conn.close()
        outputs[hidden] = _dumped({"mcp": found, "raw": raw})
    assert outputs[True] == outputs[False]
    found = json.loads(outputs[True])
    assert len(found["raw"]) == 3 and len(found["mcp"]["items"]) == 3
