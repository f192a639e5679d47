"""The audience rule: an agent never sees a private note or a note with `ai_processing: none`,
on any output path; no model ever reads the text of an `ai_processing: none` note.

Every note below that matches "Zitronenbaum" is findable by the owner; the agent must find
only the open ones. Plumbing with fakes that record what they are handed (named so).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes import DeterministicFakeEmbedder, RecordingReranker

from mindtui.audience import Audience
from mindtui.cli import main
from mindtui.config import load_settings
from mindtui.errors import NotAllowed, NoteNotFound
from mindtui.models.holder import ModelHolder
from mindtui.service import SearchOptions, Service
from mindtui.store import open_database
from mindtui.store.meta import VAULT_KEY, get_meta
from mindtui.vault.flags import read_flags

from conftest import run_import

HIDDEN = {"Geheim.md", "Privat/Tagebuch.md", "Ohne KI.md", "Unklar.md"}
WORK_LOG = """| Datum | Sitzung | Notizen |
|---|---|---|
| 2026-11-01 | S1 | [[Offen]], [[Geheim]] |
| 2026-11-02 | S2 | [[Offen]], [[Hub]] |
| 2026-11-03 | S3 | [[Offen]], [[Hub]], [[Geheim]] |
"""


@pytest.fixture
def privacy_vault(vault, db_path, monkeypatch):
    monkeypatch.setenv("MINDTUI_PRIVACY__PRIVATE_PATHS", "[Privat/**]")
    vault.write("Geheim.md", "---\nprivate: true\n---\n# Geheim\nZitronenbaum Zitronenbaum: die Gehaltszahl. "
                             "Siehe [[Nachbar]].\n")
    vault.write("Privat/Tagebuch.md", "Heute den Zitronenbaum gegossen. [[Offen]]\n")
    vault.write("Ohne KI.md", "---\nai_processing: none\n---\nDer Zitronenbaum und die Krankenakte.\n")
    vault.write("Unklar.md", "---\nai_processing: vielleicht\n---\nZitronenbaum, unklar markiert.\n")
    vault.write("Offen.md", "Ein Zitronenbaum im Garten. [[Geheim]] [[Ohne KI]] [[Hub]]\n")
    vault.write("Nachbar.md", "Der Nachbar hat einen Garten.\n")
    vault.write("Hub.md", "Übersicht: [[Geheim]] [[Offen]] [[Ohne KI]]\n")
    for n in range(3):
        vault.write(f"Verweis {n}.md", f"Verweis {n} auf [[Geheim]] und [[Ohne KI]].\n")
    vault.write("Journal/Arbeitslog.md", WORK_LOG, dedent=False)
    fake = DeterministicFakeEmbedder()
    reranker = RecordingReranker()
    holder = ModelHolder(embedder_factory=lambda settings, say: fake, reranker_factory=lambda settings: reranker)
    # every cosine counts: the hash-seeded fake's vectors are near-orthogonal
    settings = load_settings().with_values({"db": str(db_path), "search": {"min_cosine": -1.0}})
    with Service(settings, audience=Audience.OWNER, models=holder) as owner:
        result = owner.run_job("nightly", vault=vault.root)
        assert result.ok, result.as_dict()
        for query in ("Zitronenbaum", "Zitronenbaum Garten", "Zitronenbaum Garten"):
            owner.search(query)  # teaches search pairs, Geheim with Offen among them
    yield settings, holder, fake, reranker


def services(privacy_vault):
    settings, holder, *_ = privacy_vault
    return Service(settings, audience=Audience.OWNER, models=holder), Service(settings, audience=Audience.AGENT,
                                                                               models=holder)


def paths_of(response) -> set[str]:
    return {r.path for r in response.results}


def test_search_results_and_snippets(privacy_vault):
    owner, agent = services(privacy_vault)
    with owner, agent:
        for mode in ("hybrid", "fts", "vector"):
            mine = owner.search("Zitronenbaum", SearchOptions(mode=mode, log=False, limit=20))
            theirs = agent.search("Zitronenbaum", SearchOptions(mode=mode, log=False, limit=20))
            if mode != "vector":  # the owner finds every one by its words
                assert HIDDEN <= paths_of(mine)
            assert "Offen.md" in paths_of(theirs) and not HIDDEN & paths_of(theirs), mode
            assert not any("Gehaltszahl" in r.snippet or "Krankenakte" in r.snippet for r in theirs.results)
        # exact title and name mentions too
        assert "Geheim.md" in paths_of(owner.search("Geheim", SearchOptions(log=False)))
        assert "Geheim.md" not in paths_of(agent.search("Geheim", SearchOptions(log=False)))
        assert not HIDDEN & paths_of(agent.search("was steht in Geheim und Ohne KI", SearchOptions(log=False)))


def test_graph_expansion_sources(privacy_vault):
    owner, agent = services(privacy_vault)
    with owner, agent:
        options = SearchOptions(mode="fts", log=False, expand=True, limit=20)
        mine = owner.search("Gehaltszahl Garten", options)
        geheim = next(r.note_id for r in mine.results if r.path == "Geheim.md")
        nachbar = next(r for r in mine.results if r.path == "Nachbar.md")
        assert geheim in nachbar.explain["graph"]["from"]  # Geheim links to Nachbar and lends it score
        theirs = agent.search("Gehaltszahl Garten", options)
        nachbar = next(r for r in theirs.results if r.path == "Nachbar.md")  # found by its own word
        assert not any(geheim in r.explain.get("graph", {}).get("from", []) for r in theirs.results)
        assert "graph" not in nachbar.explain


def test_neighbours_and_their_evidence(privacy_vault):
    owner, agent = services(privacy_vault)
    with owner, agent:
        mine = owner.neighbours("Offen")
        theirs = agent.neighbours("Offen")
        seen = {n.path for entries in theirs.groups.values() for n in entries}
        assert {"Geheim.md", "Ohne KI.md"} <= {n.path for entries in mine.groups.values() for n in entries}
        assert not HIDDEN & seen and "Hub.md" in seen
        assert {n.path for n in mine.groups["search"]} & HIDDEN  # the owner's searches paired them
        texts = json.dumps(theirs.as_dict(), ensure_ascii=False)
        assert "Geheim" not in texts and "Ohne KI" not in texts and "Tagebuch" not in texts
        change = next(n for n in mine.groups["change"] if n.path == "Hub.md")
        assert "[[Geheim]]" in change.evidence  # the work-log row names the private note...
        change = next(n for n in theirs.groups["change"] if n.path == "Hub.md")
        assert change.evidence and "Geheim" not in change.evidence  # ...the agent gets the session keys only
        with pytest.raises(NoteNotFound):
            agent.neighbours("Geheim")


def test_found_together_pairs_are_the_owners_search_history(privacy_vault):
    """The pairs the owner's searches taught are the owner's, as the searches are: an agent gets
    them only with privacy.agent_uses_history, and then those between notes it sees."""
    settings, holder, *_ = privacy_vault
    owner, agent = services(privacy_vault)
    allowed = Service(settings.with_values({"privacy": {"agent_uses_history": True}}), audience=Audience.AGENT,
                      models=holder)
    with owner, agent, allowed:
        mine = {n.path for n in owner.neighbours("Offen").groups["search"]}
        assert mine - HIDDEN and mine & HIDDEN  # the searches paired Offen with visible and hidden notes
        assert agent.neighbours("Offen").groups["search"] == [] and agent.graph_stats()["counts"]["search_pairs"] == 0
        theirs = {n.path for n in allowed.neighbours("Offen").groups["search"]}
        assert theirs == mine - HIDDEN
        assert 0 < allowed.graph_stats()["counts"]["search_pairs"] < owner.graph_stats()["counts"]["search_pairs"]


def test_note_text(privacy_vault):
    owner, agent = services(privacy_vault)
    with owner, agent:
        assert "Gehaltszahl" in owner.note("Geheim").text
        assert owner.note("Ohne KI.md").ai_processing is False
        for name in ("Geheim", "Geheim.md", "Privat/Tagebuch.md", "Tagebuch", "Ohne KI", "Unklar"):
            with pytest.raises(NoteNotFound, match="no note"):
                agent.note(name)
        offen = agent.note("Offen")
        assert offen.text.startswith("Ein Zitronenbaum") and "[[Hub]]" in offen.text
        assert "Geheim" not in offen.text and "Ohne KI" not in offen.text  # its links to hidden notes are redacted
        assert "[[Geheim]]" in owner.note("Offen").text
        # A front end's chunks fetched after the text (the TUI's big notes): what note() would give.
        for service in (owner, agent):
            assert service.note_chunks("Offen") == service.note("Offen", with_chunks=True).chunks
        assert all(c.chunk_id is None for c in agent.note_chunks("Offen"))
        assert "Geheim" not in json.dumps([c.__dict__ for c in agent.note_chunks("Offen")], ensure_ascii=False)
        for name in ("Geheim", "Tagebuch", "Ohne KI"):
            with pytest.raises(NoteNotFound, match="no note"):
                agent.note_chunks(name)


def test_graph_stats_and_counts(privacy_vault):
    owner, agent = services(privacy_vault)
    with owner, agent:
        mine, theirs = owner.graph_stats(), agent.graph_stats()
        assert mine["most_connected"]["links"][0]["path"] == "Geheim.md"
        listed = {e["path"] for entries in theirs["most_connected"].values() for e in entries}
        assert listed and not HIDDEN & listed
        assert theirs["counts"]["links"] < mine["counts"]["links"]
        assert theirs["counts"]["search_pairs"] < mine["counts"]["search_pairs"]
        mine, theirs = owner.status(), agent.status()
        assert mine["notes_total"] - theirs["notes_total"] == len(HIDDEN)
        assert theirs["chunks_total"] < mine["chunks_total"]
        assert all(run["report"] == {} for run in theirs["recent_runs"])  # reports carry every note's path


def test_no_model_reads_a_note_without_consent(privacy_vault):
    settings, holder, fake, reranker = privacy_vault
    assert fake.embedded_texts and not any("Krankenakte" in t or "unklar markiert" in t for t in fake.embedded_texts)
    assert any("Gehaltszahl" in t for t in fake.embedded_texts)  # private is not "no AI": the owner's search uses it
    with Service(settings, audience=Audience.OWNER, models=holder) as owner:
        response = owner.search("Zitronenbaum Krankenakte", SearchOptions(log=False, limit=20))
    assert "Ohne KI.md" in paths_of(response)  # the owner still finds it by its words...
    assert reranker.seen and not any("Krankenakte" in p or "unklar markiert" in p for p in reranker.seen)
    ohne = next(r for r in response.results if r.path == "Ohne KI.md")
    assert "rerank" not in ohne.explain and "vector" not in ohne.explain  # ...but no model read it


def test_search_log_keeps_audiences_apart(privacy_vault, monkeypatch):
    settings, holder, *_ = privacy_vault
    conn = open_database(settings.db_path)
    pairs_before = conn.execute("SELECT count(*), sum(weight) FROM search_pairs").fetchone()
    with Service(settings, audience=Audience.AGENT, models=holder) as agent:
        agent.search("Garten Nachbar")
    rows = conn.execute("SELECT audience, query FROM search_log ORDER BY search_id").fetchall()
    assert rows[-1] == ("agent", "Garten Nachbar") and rows[0][0] == "owner"
    assert conn.execute("SELECT count(*), sum(weight) FROM search_pairs").fetchone() == pairs_before
    quiet = settings.with_values({"privacy": {"log_agent_queries": False}})
    with Service(quiet, audience=Audience.AGENT, models=holder) as agent:
        agent.search("Garten Zitronenbaum")
    assert conn.execute("SELECT count(*) FROM search_log").fetchone()[0] == len(rows)
    conn.close()


def test_cli_audience_agent(privacy_vault, capsys):
    settings, *_ = privacy_vault
    db = str(settings.db_path)
    assert main(["search", "Zitronenbaum", "--db", db, "--json", "--mode", "fts", "--no-log", "--limit", "20"]) == 0
    assert HIDDEN <= {r["path"] for r in json.loads(capsys.readouterr().out)["results"]}
    assert main(["search", "Zitronenbaum", "--db", db, "--json", "--mode", "fts", "--no-log", "--limit", "20",
                 "--audience", "agent"]) == 0
    out = capsys.readouterr().out
    assert not HIDDEN & {r["path"] for r in json.loads(out)["results"]} and "Gehaltszahl" not in out
    assert main(["note", "Geheim", "--db", db, "--audience", "agent"]) == 1
    assert "no note" in capsys.readouterr().err


@pytest.mark.parametrize("metadata, ai, private, warned", [
    ({}, True, False, False),
    ({"ai_processing": "none"}, False, False, False),
    ({"ai_processing": "OFF"}, False, False, False),
    ({"ai_processing": False}, False, False, False),  # YAML `no`
    ({"ai_processing": "Yes"}, True, False, False),
    ({"ai_processing": 1}, True, False, False),
    ({"ai_processing": "vielleicht"}, False, False, True),
    ({"ai_processing": None}, False, False, True),
    ({"private": True}, True, True, False),
    ({"private": "On"}, True, True, False),
    ({"private": "false"}, True, False, False),
    ({"private": "jein"}, True, True, True),
    ({"visibility": "private"}, True, True, False),
    ({"visibility": "Shared"}, True, False, False),
    ({"visibility": "team"}, True, True, True),
])
def test_flags_are_parsed_strictly_and_fail_closed(metadata, ai, private, warned):
    flags = read_flags(metadata)
    assert (flags.ai_processing, flags.private, bool(flags.warnings)) == (ai, private, warned)


def test_unknown_flag_value_is_a_warning_with_the_path(privacy_vault):
    settings, *_ = privacy_vault
    report = run_import(settings.db_path, privacy_vault_root(settings))
    assert any(w.path == "Unklar.md" and "ai_processing: 'vielleicht'" in w.reason for w in report.warnings)


def privacy_vault_root(settings):
    """The vault the fixture imported (recorded in meta by every import)."""
    conn = open_database(settings.db_path)
    try:
        return Path(get_meta(conn, VAULT_KEY))
    finally:
        conn.close()


def test_private_paths_setting_applies_when_it_changes(privacy_vault, monkeypatch):
    settings, holder, *_ = privacy_vault
    root = privacy_vault_root(settings)
    monkeypatch.setenv("MINDTUI_PRIVACY__PRIVATE_PATHS", "[]")
    run_import(settings.db_path, root)
    conn = open_database(settings.db_path)
    flags = dict(conn.execute("SELECT path, private FROM notes").fetchall())
    assert flags["Privat/Tagebuch.md"] == 0 and flags["Geheim.md"] == 1  # its own frontmatter still says so
    monkeypatch.setenv("MINDTUI_PRIVACY__PRIVATE_PATHS", "[Journal/**]")
    run_import(settings.db_path, root)
    flags = dict(conn.execute("SELECT path, private FROM notes").fetchall())
    conn.close()
    assert flags["Journal/Arbeitslog.md"] == 1 and flags["Privat/Tagebuch.md"] == 0


def test_hidden_notes_cannot_crowd_visible_ones_out_of_an_agents_results(vault, db_path):
    """Sixty private notes outrank the one open note by BM25; the agent still gets the open one."""
    for n in range(60):
        vault.write(f"Privat/Akte {n}.md", "---\nprivate: true\n---\nQuittenbaum Quittenbaum Quittenbaum.\n")
    vault.write("Offen.md", "Ein Quittenbaum, einmal erwähnt, zwischen vielen anderen Wörtern im Garten.\n")
    run_import(db_path, vault.root)
    settings = load_settings().with_values({"db": str(db_path), "search": {"candidate_pool": 5}})
    with Service(settings, audience=Audience.AGENT, models=ModelHolder()) as agent:
        response = agent.search("Quittenbaum", SearchOptions(mode="fts", log=False))
    assert [r.path for r in response.results] == ["Offen.md"]


@pytest.mark.parametrize("frontmatter, ai, private", [
    ('private: true\nai_processing: none\ntitle: "Gehalt: 2027\n', False, True),  # unclosed quote
    ("private: yes  # wirklich\ntags: [a, b\n", True, True),
    ("- private: true\n- ai_processing: none\n", False, True),  # a list, not a mapping
    ("{private: true, tags: [x}\n", True, True),  # named but not on a line of its own: restrictive
    ("tags: [a, b\n", True, False),  # broken, but no flag mentioned
    # A flag given twice (YAML keeps the last): its restrictive value.
    ("private: true\nprivate: false\n", True, True),
    ("ai_processing: none\ntags: [a]\nai_processing: true\n", False, False),
    ("visibility: private\nvisibility: public\n", True, True),
    # A consent key in another case or with a space or hyphen (read as written, it was open to agents).
    ("Private: TRUE\n", True, True),
    ("AI_Processing: none\n", False, False),
    ("AI Processing: none\nprivate: false\n", False, False),
    ("private: true\nPrivate: false\n", True, True),  # two spellings: the restrictive one
    ("Visibility: Private\n", True, True),
])
def test_unreadable_or_doubled_frontmatter_keeps_its_consent_flags(vault, db_path, frontmatter, ai, private):
    vault.write("Kaputt.md", f"---\n{frontmatter}---\nZitronenbaum Gehaltszahl.\n", dedent=False)
    report = run_import(db_path, vault.root)
    conn = open_database(db_path)
    flags = conn.execute("SELECT ai_processing, private FROM notes WHERE path = 'Kaputt.md'").fetchone()
    conn.close()
    assert flags == (int(ai), int(private))
    assert any(w.path == "Kaputt.md" and "frontmatter" in w.reason for w in report.warnings)


def test_a_private_folder_is_hidden_from_agents_before_the_next_import(privacy_vault):
    """The stored flags come from the import's settings; a reader's own private_paths apply at once."""
    settings, holder, *_ = privacy_vault
    with Service(settings, audience=Audience.AGENT, models=holder) as agent:
        assert "Nachbar.md" in {r.path for r in agent.search("Nachbar Garten", SearchOptions(mode="fts",
                                                                                            log=False)).results}
        visible = agent.status()["notes_total"]
    for pattern in ("Nachbar.md", "Nach*.md"):  # a plain name is a file or folder, as a person writes it
        stricter = settings.with_values({"privacy": {"private_paths": ["Privat/**", pattern]}})
        with Service(stricter, audience=Audience.AGENT, models=holder) as agent:
            found = {r.path for r in agent.search("Nachbar Garten", SearchOptions(mode="fts", log=False)).results}
            assert "Nachbar.md" not in found and "Offen.md" in found
            with pytest.raises(NoteNotFound):
                agent.note("Nachbar")
            assert agent.status()["notes_total"] == visible - 1


def test_every_field_an_agent_gets_is_redacted(privacy_vault):
    """Frontmatter values, headings, a snippet whose window cuts a link in half, explain's raw scores."""
    settings, holder, *_ = privacy_vault
    root = privacy_vault_root(settings)
    filler = " ".join(f"wort{i}" for i in range(40))
    # snippet(): the window starts 73 characters before the query word and is 220 long; the link
    # to the private note is placed to straddle its end.
    line = f"{filler} Pomeranze {'y' * 128} [[Geheim]] am Ende."
    (root / "Zeta.md").write_text(f'---\nrelated: ["[[Geheim]]"]\naliases: [Zet]\n---\n# Zeta\n\n## Siehe [[Geheim]]\n\n'
                                  f"{line}\n", encoding="utf-8")
    run_import(settings.db_path, root)
    with Service(settings, audience=Audience.AGENT, models=holder) as agent, \
            Service(settings, audience=Audience.OWNER, models=holder) as owner:
        mine = owner.search("Pomeranze", SearchOptions(mode="fts", log=False)).results[0]
        assert "[[Gehe" in mine.snippet and not mine.snippet.endswith("]]")  # the window does cut the link
        theirs = agent.search("Pomeranze", SearchOptions(mode="fts", log=False)).results[0]
        assert theirs.path == "Zeta.md" and "Gehe" not in theirs.snippet
        assert theirs.explain["fts"] == {"rank": 1} and "bm25" in json.dumps(mine.explain)
        dumped = json.dumps(agent.note("Zeta", with_chunks=True).as_dict(), ensure_ascii=False)
        assert "Geheim" not in dumped and "[[unavailable note]]" in dumped
        assert "Geheim" in json.dumps(owner.note("Zeta", with_chunks=True).as_dict(), ensure_ascii=False)


def test_redaction_of_links_cut_at_a_window_edge():
    from mindtui.service.redact import redact

    assert redact("…und dann [[Gehalt", frozenset().__contains__) == "…und dann [[…]]"
    assert redact("altsgespräch]] und weiter", frozenset().__contains__) == "[[…]] und weiter"


def test_a_link_stands_only_when_it_reaches_a_note_the_agent_sees():
    """A link to a hidden note and a link to no note read the same: `[[unavailable note]]`."""
    from mindtui.service.redact import redact

    visible = frozenset({"offen", "projekte/plan", "plan", "start"}).__contains__
    assert redact("siehe [[Offen]], [[Geheim|das]] und [[Nirgends]]", visible) == (
        "siehe [[Offen]], [[unavailable note]] und [[unavailable note]]")
    assert redact("[Text](Privat/Gehalt%20neu.md) und [x](Offen.md)", visible) == "[[unavailable note]] und [x](Offen.md)"
    # a visible note's path, a suffix of it, a heading, an attachment and a URL stand
    kept = ("[[Projekte/Plan#Ziele|den Plan]] [[./offen.md]] [[#Ziele]] ![[Skizze.png]]"
            " [Seite](https://example.org/Geheim) [[mailto:a@b.de]] [Bild](<Bilder/Geheim 1.jpg>)")
    assert redact(kept, visible) == kept
    # a path that is no visible note's, though its file name is (it may be a hidden note's)
    assert redact("[[Privat/Geheim#Ziele]] [[Geheim.md]] [x](<Geheim Neu.md>) [[Privat/Plan]]", visible) == " ".join(
        ["[[unavailable note]]"] * 4)


def test_evaluation_is_for_the_owner_and_never_feeds_a_model_a_note_without_consent(vault, tmp_path, capsys):
    """eval links uses each linking note's text as a query: an ai_processing: none note is no source."""
    vault.write("Arzt.md", "Der Hausarzt in der Nachbarschaft.\n")
    vault.write("Akte.md", "---\nai_processing: none\n---\nMeine Krankenakte, Diagnose, siehe [[Arzt]].\n")
    vault.write("Offen.md", "Ein offener Text über den Garten, siehe [[Arzt]].\n")
    fake = DeterministicFakeEmbedder()
    asked: list[str] = []
    original = fake.embed_query

    def recording_query(text):
        asked.append(text)
        return original(text)

    fake.embed_query = recording_query
    holder = ModelHolder(embedder_factory=lambda settings, say: fake)
    settings = load_settings().with_overrides(db=str(tmp_path / "mine.db"))
    with Service(settings, audience=Audience.AGENT, models=holder) as agent:
        with pytest.raises(NotAllowed, match="evaluation is for the owner"):
            agent.evaluate("links", vault.root, scratch=tmp_path / "eval")
    with Service(settings, audience=Audience.OWNER, models=holder) as owner:
        report = owner.evaluate("links", vault.root, scratch=tmp_path / "eval", systems=["hybrid"])
        assert owner.run_job("index", steps=["import"], vault=vault.root).ok  # mine.db, for the status below
    assert report["queries"] == 1 and asked and not any("Krankenakte" in text for text in asked)
    assert fake.embedded_texts and not any("Krankenakte" in text for text in fake.embedded_texts)
    assert main(["--audience", "agent", "eval", "links", str(vault.root)]) == 2  # the CLI says so too
    assert "only reading commands" in capsys.readouterr().err
    assert main(["--audience", "agent", "--db", str(tmp_path / "mine.db"), "--json"]) == 0  # status reads as agent
    assert json.loads(capsys.readouterr().out)["audience"] == "agent"
