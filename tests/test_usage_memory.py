"""Usage memory: what the owner opens after a search is recorded (by the owner only) and lifts that
note for later searches that mean the same; bounded, explained, forgettable, never for a hidden
or deleted note, never taught by an agent. Plumbing with the deterministic fake embedder (its
vectors are near-orthogonal, so memory works here from shared words and shared results).
"""

from __future__ import annotations

import datetime
import json

import pytest
from fakes import DeterministicFakeEmbedder

from mindtui.audience import Audience
from mindtui.cli import main
from mindtui.config import load_settings
from mindtui.errors import NotAllowed
from mindtui.models.holder import ModelHolder
from mindtui.service import InputError, SearchOptions, Service
from mindtui.store import open_database, usage_store

from conftest import run_import

QUERY = "Wasser Tomaten Garten"


@pytest.fixture
def garden(vault, db_path):
    """Tomaten.md answers QUERY best by its words; Gießkanne.md is the note the owner wants."""
    vault.write("Tomaten.md", "# Tomaten\nTomaten brauchen Wasser, Sonne und einen Garten. Tomaten, Tomaten.\n")
    vault.write("Gießkanne.md", "# Gießkanne\nDie Gießkanne steht im Schuppen; Wasser holen für den Garten.\n")
    vault.write("Schuppen.md", "# Schuppen\nIm Schuppen liegen Spaten und Harke.\n")
    vault.write("Geheim.md", "---\nprivate: true\n---\n# Geheim\nWasser Tomaten Garten: das Geheimrezept.\n")
    vault.write("Kompost.md", "# Kompost\nKompost für Tomaten im Garten, mit etwas Wasser feucht halten.\n")
    run_import(db_path, vault.root)
    return vault


def _service(db_path, audience=Audience.OWNER, **values) -> Service:
    fake = DeterministicFakeEmbedder()
    settings = load_settings().with_values({"db": str(db_path), **values})
    return Service(settings, audience=audience, models=ModelHolder(embedder_factory=lambda s, say: fake))


def _open_after(service: Service, query: str, path: str, how: str = "enter"):
    response = service.search(query, SearchOptions(log=False))
    return service.record_open(query, "hybrid", [r.log_key for r in response.results], path, how)


def _paths(response) -> list[str]:
    return [r.path for r in response.results]


def test_an_open_is_recorded_with_its_search_rank_and_query_vector(garden, db_path):
    with _service(db_path) as owner:
        owner.run_job("embed")
        recorded = _open_after(owner, QUERY, "Gießkanne.md")
    conn = open_database(db_path, readonly=True)
    (query, vector, model, audience), = conn.execute(
        "SELECT query, query_vector, vector_model, audience FROM search_log").fetchall()
    opens = conn.execute("SELECT search_id, note_id, rank, how FROM search_opens").fetchall()
    conn.close()
    assert (query, audience, model, len(vector)) == (QUERY, "owner", "fake-hash-embedder", 384 * 4)
    assert opens == [(recorded.search_id, recorded.note_id, recorded.rank, "enter")]
    assert recorded.rank is not None and recorded.rank > 1


def test_the_opened_note_comes_back_first_and_says_why(garden, db_path):
    with _service(db_path) as owner:
        before = _paths(owner.search(QUERY, SearchOptions(log=False)))
        assert before[0] == "Tomaten.md" and "Gießkanne.md" in before
        _open_after(owner, QUERY, "Gießkanne.md")
        after = owner.search(QUERY, SearchOptions(log=False))
        off = owner.search(QUERY, SearchOptions(log=False, memory=False))
    assert _paths(after)[0] == "Gießkanne.md"
    assert after.results[0].explain["memory"]["why"] == f"opened after a similar search: '{QUERY}' (1×, today)"
    assert _paths(off) == before  # memory off: the ranking from before
    with _service(db_path, search={"memory": False}) as owner:
        assert _paths(owner.search(QUERY, SearchOptions(log=False))) == before


def test_an_exact_title_match_stays_above_memory(garden, db_path):
    with _service(db_path) as owner:
        for _ in range(3):
            _open_after(owner, "Tomaten", "Gießkanne.md")
        response = owner.search("Tomaten", SearchOptions(log=False))
    assert _paths(response)[:2] == ["Tomaten.md", "Gießkanne.md"]
    assert "3×" in response.results[1].explain["memory"]["why"]


def test_older_opens_lend_less(garden, db_path):
    with _service(db_path) as owner:
        recorded = _open_after(owner, QUERY, "Gießkanne.md")
        fresh = owner.search(QUERY, SearchOptions(log=False)).results[0].explain["memory"]["lent"]
        conn = open_database(db_path)
        days_ago = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=90, hours=1))
        with conn:
            conn.execute("UPDATE search_opens SET opened_at = ? WHERE open_id = ?",
                         (days_ago.isoformat(timespec="seconds"), recorded.open_id))
        conn.close()
        response = owner.search(QUERY, SearchOptions(log=False))
    entry = next(r.explain["memory"] for r in response.results if r.path == "Gießkanne.md")
    assert entry["lent"] < fresh * 0.6  # one half-life (90 days): about half
    assert entry["why"].endswith("(1×, 90 days ago)")


def test_an_agent_never_records_nor_teaches(garden, db_path):
    with _service(db_path, audience=Audience.AGENT) as agent:
        with pytest.raises(NotAllowed):
            _open_after(agent, QUERY, "Gießkanne.md")
        agent.search(QUERY)  # logged apart (privacy.log_agent_queries), with no vector
    assert main(["--db", str(db_path), "search", QUERY, "--audience", "agent", "--opened", "Gießkanne.md"]) == 2
    conn = open_database(db_path, readonly=True)
    assert conn.execute("SELECT count(*) FROM search_opens").fetchone()[0] == 0
    assert conn.execute("SELECT audience, query_vector FROM search_log").fetchall() == [("agent", None)]
    conn.close()
    with _service(db_path) as owner:  # and an agent's logged search lends the owner nothing
        assert not any("memory" in r.explain for r in owner.search(QUERY, SearchOptions(log=False)).results)


# An agent's search is compared with past searches by what they found and opened alone (never
# by their words: search/memory.py); five notes share too few results to reach the shipped
# evidence, so its tests lend from any overlap.
AGENT_MEMORY = {"agent_uses_history": True}
ANY_OVERLAP = {"memory_min_evidence": 0.0, "memory_rank_penalty": 0.0}


def test_an_agent_gets_memory_only_when_allowed_and_never_a_past_query(garden, db_path):
    with _service(db_path) as owner:
        _open_after(owner, QUERY, "Gießkanne.md")
        _open_after(owner, QUERY, "Geheim.md")  # private: the owner may open it; an agent never sees it
    with _service(db_path, audience=Audience.AGENT) as agent:
        plain = agent.search(QUERY, SearchOptions(log=False))
    assert not any("memory" in r.explain for r in plain.results)
    with _service(db_path, audience=Audience.AGENT, privacy=AGENT_MEMORY, search=ANY_OVERLAP) as agent:
        allowed = agent.search(QUERY, SearchOptions(log=False))
    assert _paths(allowed)[0] == "Gießkanne.md" and "Geheim.md" not in _paths(allowed)
    text = json.dumps(allowed.as_dict(), ensure_ascii=False)
    assert "opened after a similar search (2×, today)" not in text  # Geheim's open is not counted for it
    assert allowed.results[0].explain["memory"] == {"rank": 1, "why": "opened after a similar search (1×, today)"}
    assert QUERY not in text.replace(allowed.results[0].snippet, "")


def test_a_hidden_note_is_never_lent_to(garden, db_path, monkeypatch):
    """A note hidden from the reader by a folder in privacy.private_paths (at read time) gets nothing."""
    garden.write("Beet/Plan.md", "# Plan\nWo welche Pflanze steht.\n")
    run_import(db_path, garden.root)
    with _service(db_path) as owner:
        _open_after(owner, QUERY, "Beet/Plan.md")
    with _service(db_path, audience=Audience.AGENT, privacy=AGENT_MEMORY, search=ANY_OVERLAP) as agent:
        assert "Beet/Plan.md" in _paths(agent.search(QUERY, SearchOptions(log=False)))
    with _service(db_path, audience=Audience.AGENT, search=ANY_OVERLAP,
                  privacy={**AGENT_MEMORY, "private_paths": ["Beet/**"]}) as agent:
        assert "Beet/Plan.md" not in _paths(agent.search(QUERY, SearchOptions(log=False, limit=50)))


def test_a_deleted_note_loses_its_opens(garden, db_path):
    with _service(db_path) as owner:
        _open_after(owner, QUERY, "Schuppen.md")
        garden.remove("Schuppen.md")
        owner.run_job("index", steps=["import"], vault=garden.root)
        assert "Schuppen.md" not in _paths(owner.search(QUERY, SearchOptions(log=False)))
    conn = open_database(db_path, readonly=True)
    assert conn.execute("SELECT count(*) FROM search_opens").fetchone()[0] == 0
    conn.close()


def test_forgetting_removes_the_boost(garden, db_path):
    with _service(db_path) as owner:
        _open_after(owner, QUERY, "Gießkanne.md")
        _open_after(owner, "Spaten Harke", "Schuppen.md")
        assert owner.usage_forget(query="wasser TOMATEN garten ")["searches"] == 1
        assert not any("memory" in r.explain for r in owner.search(QUERY, SearchOptions(log=False)).results)
        assert any("memory" in r.explain for r in owner.search("Spaten Harke", SearchOptions(log=False)).results)
        assert owner.usage_forget(note="Schuppen")["opens"] == 1
        assert not any("memory" in r.explain
                       for r in owner.search("Spaten Harke", SearchOptions(log=False)).results)
        _open_after(owner, QUERY, "Gießkanne.md")
        assert owner.usage_forget(before="2000-01-01")["searches"] == 0
        counts = owner.usage_forget(everything=True)
        assert counts["searches"] == 2 and counts["opens"] == 1
        with pytest.raises(InputError):
            owner.usage_forget()
        with pytest.raises(InputError):
            owner.usage_forget(before="last week")
    conn = open_database(db_path, readonly=True)
    assert conn.execute("SELECT count(*) FROM search_log").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM search_pairs").fetchone()[0] == 0  # what they taught, untaught
    conn.close()


def test_the_cli_records_opened_and_forgets(garden, db_path, capsys):
    assert main(["--db", str(db_path), "search", QUERY, "--opened", "Gießkanne", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    conn = open_database(db_path, readonly=True)
    assert conn.execute("SELECT search_id, how FROM search_opens").fetchall() == [(printed["search_id"], "cli")]
    conn.close()
    assert main(["--db", str(db_path), "search", QUERY, "--opened", "Gießkanne", "--no-log"]) == 2
    assert main(["--db", str(db_path), "search", QUERY, "--explain"]) == 0
    assert f"memory: opened after a similar search: '{QUERY}' (1×, today)" in capsys.readouterr().out
    assert main(["--db", str(db_path), "eval", "usage"]) == 0
    assert capsys.readouterr().out.startswith("usage: 1 logged searches with 1 opens")
    assert main(["--db", str(db_path), "usage", "forget", "--all", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["opens"] == 1
    assert main(["--db", str(db_path), "usage", "forget"]) == 2


def test_retention_prunes_old_opens_and_query_vectors(garden, db_path):
    with _service(db_path) as owner:
        owner.run_job("embed")
        kept = _open_after(owner, QUERY, "Gießkanne.md")
        old = _open_after(owner, "Kompost Garten", "Schuppen.md")
        conn = open_database(db_path)
        then = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=400)).isoformat(timespec="seconds")
        with conn:
            conn.execute("UPDATE search_opens SET opened_at = ? WHERE open_id = ?", (then, old.open_id))
            conn.execute("UPDATE search_log SET searched_at = ? WHERE search_id = ?", (then, old.search_id))
        result = owner.run_job("nightly", vault=garden.root, steps=["graph"])
    report = {s.step: s.report for s in result.steps}["graph"]
    assert report["usage"] == {"opens_forgotten": 1, "query_vectors_forgotten": 1}
    assert conn.execute("SELECT search_id FROM search_opens").fetchall() == [(kept.search_id,)]
    conn.close()


def test_eval_usage_replays_the_log_with_a_known_answer(garden, db_path):
    """Three logged searches: the opened note is first now for one, in the top 5 for two; the third
    opened a note no search for its words finds. Each is replayed without its own memory."""
    with _service(db_path) as owner:
        _open_after(owner, "Tomaten", "Tomaten.md")  # an exact title: first with or without memory
        _open_after(owner, "Spaten Harke", "Kompost.md")  # never found by those words
        _open_after(owner, "Kompost Wasser", "Kompost.md")
        report = owner.evaluate("usage", None)
    assert report["searches"] == 3 and report["opens"] == 3
    rows = {r["query"]: r for r in report["rows"]}
    assert rows["Tomaten"]["memory"] == {"hit@1": 1.0, "hit@5": 1.0}
    assert rows["Spaten Harke"]["no_memory"] == {"hit@1": 0.0, "hit@5": 0.0}
    assert rows["Kompost Wasser"]["no_memory"]["hit@5"] == 1.0
    # Without its own memory: "Spaten Harke" gains nothing from its own open (nothing else is similar).
    assert rows["Spaten Harke"]["memory"] == {"hit@1": 0.0, "hit@5": 0.0}
    month = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m")
    assert report["months"] == [{"month": month, "searches": 3, "memory": report["memory"],
                                 "no_memory": report["no_memory"]}]
    assert report["no_memory"]["hit@5"] == round(2 / 3, 4)


def test_an_open_of_an_agent_search_is_refused_by_the_store(garden, db_path):
    conn = open_database(db_path)
    with conn:
        conn.execute("INSERT INTO search_log (searched_at, query, mode, results, audience)"
                     " VALUES ('2026-01-01', 'x', 'hybrid', '[]', 'agent')")
    with pytest.raises(ValueError):
        usage_store.record_open(conn, conn.last_insert_rowid(), "Tomaten.md", None, "enter")
    conn.close()


def test_the_nightly_keeps_the_owners_measure_in_its_report(garden, db_path):
    with _service(db_path) as owner:
        assert "usage_hit@1" not in owner.run_job("graph", vault=garden.root).steps[0].report  # nothing to replay
        _open_after(owner, "Tomaten", "Tomaten.md")
        _open_after(owner, "Spaten Harke", "Kompost.md")
        report = owner.run_job("graph", vault=garden.root).steps[0].report
    assert (report["usage_searches_replayed"], report["usage_hit@1"], report["usage_hit@5"]) == (2, 0.5, 0.5)


def test_the_nightly_fit_adopts_a_clear_gain_and_never_overrides_the_users_file(garden, db_path, tmp_path,
                                                                                  monkeypatch):
    """Twelve searches after which the owner opened a note only memory finds: the fit raises
    memory_weight (it then comes first); a memory_weight in the user's file is never replaced."""
    from mindtui.store.meta import get_meta_if_any, set_meta

    conn = open_database(db_path)
    with conn:  # an earlier fit's value, too weak for these searches (the user set none)
        set_meta(conn, "search_learnt", json.dumps({"values": {"memory_weight": 0.5}}))
    conn.close()
    with _service(db_path, search={"fit_min_opens": 13}) as owner:
        for query in ["Tomaten Sonne"] * 12:  # typed again and again: memory lends fully
            _open_after(owner, query, "Schuppen.md")
        assert owner.run_job("graph", vault=garden.root).steps[0].report["fit"]["fitted"] is False  # 12 < 13
    with _service(db_path, search={"fit_min_opens": 12}) as owner:
        report = owner.run_job("graph", vault=garden.root).steps[0].report["fit"]
        status = owner.status()
    assert report["fitted"] and report["held_out_searches"] == 4 and report["adopted"], report
    assert report["current"]["memory_weight"] == 0.5 and report["chosen"]["memory_weight"] > 0.5
    assert report["held_out_mrr"]["gain"] >= 0.02
    conn = open_database(db_path)
    assert json.loads(get_meta_if_any(conn, "search_learnt"))["values"] == report["chosen"]
    with conn:
        set_meta(conn, "search_learnt", json.dumps({"values": {"memory_weight": 2.0, "convex_alpha": 0.3}}))
    conn.close()
    assert status["learnt_settings"]["search.memory_weight"] == report["chosen"]["memory_weight"]

    user_file = tmp_path / "mindtui.yaml"
    user_file.write_text("search:\n  memory_weight: 0.25\n", encoding="utf-8")
    monkeypatch.setenv("MINDTUI_CONFIG_FILE", str(user_file))
    with Service(load_settings().with_overrides(db=str(db_path)), audience=Audience.OWNER,
                 models=ModelHolder(embedder_factory=lambda s, say: DeterministicFakeEmbedder())) as owner:
        assert owner.status()["learnt_settings"] == {"search.convex_alpha": 0.3}  # the file's 0.25 wins
        results = owner.search("Tomaten Sonne", SearchOptions(log=False)).results
    gain = next(r.explain["memory"]["lent"] for r in results if r.path == "Schuppen.md")
    assert gain <= 0.25 * max(r.explain["fused"] for r in results)


def test_a_nightly_started_as_a_child_adopts_a_fit_and_the_running_service_uses_it(garden, db_path, tmp_path,
                                                                                   monkeypatch):
    """The TUI runs the nightly in a child process: the child is given only the user's chosen
    settings (not every default and learnt value as if the user had set it, which left the fit
    nothing it may change), and the TUI's long-lived service searches with the adopted values
    once the job has ended, without a restart."""
    from mindtui.store.meta import get_meta_if_any, set_meta

    user_file = tmp_path / "mindtui.yaml"
    user_file.write_text("search:\n  fit_min_opens: 12\n", encoding="utf-8")
    monkeypatch.setenv("MINDTUI_CONFIG_FILE", str(user_file))
    conn = open_database(db_path)
    with conn:  # an earlier fit's value, too weak for these searches
        set_meta(conn, "search_learnt", json.dumps({"values": {"memory_weight": 0.5}}))
    conn.close()
    settings = load_settings().with_overrides(db=str(db_path))
    with Service(settings, audience=Audience.OWNER,
                 models=ModelHolder(embedder_factory=lambda s, say: DeterministicFakeEmbedder())) as owner:
        for query in ["Tomaten Sonne"] * 12:
            _open_after(owner, query, "Schuppen.md")
        weak = next(r.explain["memory"]["lent"] for r in owner.search("Tomaten Sonne", SearchOptions(log=False)).results
                    if r.path == "Schuppen.md")
        outcome = owner.start_job("nightly", steps=["graph"], vault=garden.root).wait(timeout=120)
        assert outcome.ok, outcome
        conn = open_database(db_path, readonly=True)
        learnt = json.loads(get_meta_if_any(conn, "search_learnt"))["values"]
        conn.close()
        assert learnt["memory_weight"] > 0.5  # the child could adopt: memory_weight was not the user's
        strong = next(r.explain["memory"]["lent"] for r in owner.search("Tomaten Sonne", SearchOptions(log=False))
                      .results if r.path == "Schuppen.md")
    assert strong == pytest.approx(weak * learnt["memory_weight"] / 0.5, rel=0.05)


def test_a_job_childs_config_holds_the_users_choices_only(tmp_path, monkeypatch):
    from mindtui.service.job_process import _write_config

    user_file = tmp_path / "mindtui.yaml"
    user_file.write_text("search:\n  memory_weight: 0.25\n", encoding="utf-8")
    monkeypatch.setenv("MINDTUI_CONFIG_FILE", str(user_file))
    parent = load_settings().with_overrides(db=str(tmp_path / "x.db")).with_learnt("search", {"convex_alpha": 0.3})
    child_file = _write_config(parent)
    try:
        child = load_settings({"MINDTUI_CONFIG_FILE": str(child_file)})
    finally:
        child_file.unlink()
    assert child.chosen == parent.chosen == {"search.memory_weight", "db", "data_dir"}  # data_dir: the tests' environment
    assert child.search.memory_weight == 0.25 and child.db_path == parent.db_path
    assert child.search.convex_alpha == load_settings().search.convex_alpha  # learnt: the child reads it itself


def test_eval_repeat_takes_the_seed_of_its_split(tmp_path):
    """`eval repeat --seed N`: another seeded half of the needs is seen (a second split checks that
    a setting chosen on one split is not tuned to its queries)."""
    from conftest import REPO, SAMPLE_VAULT

    golden, repeat = REPO / "tests" / "golden" / "sample_vault.json", REPO / "tests" / "golden" / "sample_repeat.json"
    splits = {}
    for seed in (22, 7):
        with _service(tmp_path / "unused.db") as owner:
            report = owner.evaluate("repeat", golden, vault=SAMPLE_VAULT, repeat=repeat,
                                    scratch_db=tmp_path / f"scratch-{seed}.db", **({"seed": 7} if seed == 7 else {}))
        assert report["seed"] == seed
        splits[seed] = {e["id"] for e in report["split"] if e["group"] == "seen"}
    assert len(splits[22]) == len(splits[7]) == 5 and splits[22] != splits[7]
