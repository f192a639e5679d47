"""Usage memory probed from outside: what `usage forget` leaves behind, bad input to it and to
`eval repeat`, what an agent allowed the owner's history can learn of a past query, and memory
across a note's change of id. Each test here failed before its fix (README "Usage memory")."""

from __future__ import annotations

import json

import pytest
from test_usage_memory import AGENT_MEMORY, QUERY, _open_after, _service, garden  # noqa: F401 (garden: a fixture)

from mindtui.audience import Audience
from mindtui.cli import main
from mindtui.service import InputError, SearchOptions
from mindtui.store import open_database

from conftest import query_rows


def test_forget_by_query_folds_case_beyond_ascii(garden, db_path):
    """SQLite's lower() folds A-Z only: `--query 'ärzte termin'` left the search typed 'ÄRZTE Termin'."""
    with _service(db_path) as owner:
        _open_after(owner, "ÄRZTE  Termin Gießkanne", "Gießkanne.md")
        _open_after(owner, "Spaten Harke", "Schuppen.md")
        assert owner.usage_forget(query="ärzte termin GIESSKANNE")["searches"] == 1
    assert query_rows(db_path, "SELECT query FROM search_log") == [("Spaten Harke",)]


@pytest.mark.parametrize("before", ["0001-01-01T00:00+01:00", "9999-12-31T23:59-01:00"])
def test_forget_before_a_date_out_of_range_is_a_usage_error(garden, db_path, capsys, before):
    with _service(db_path) as owner:
        _open_after(owner, QUERY, "Gießkanne.md")
        with pytest.raises(InputError, match="out of range"):
            owner.usage_forget(before=before)
    assert main(["--db", str(db_path), "usage", "forget", "--before", before]) == 2
    assert "Traceback" not in capsys.readouterr().err
    assert len(query_rows(db_path, "SELECT * FROM search_opens")) == 1


@pytest.mark.parametrize("empty", [{"query": ""}, {"query": "  "}, {"note": ""}, {"before": ""}])
def test_an_empty_condition_forgets_nothing(garden, db_path, empty):
    """`--query "$UNSET" --all` forgot every search: the empty query counted as no condition."""
    with _service(db_path) as owner:
        _open_after(owner, QUERY, "Gießkanne.md")
        with pytest.raises(InputError, match="is empty"):
            owner.usage_forget(**empty, everything=True)
        with pytest.raises(InputError, match="is empty"):
            owner.usage_forget(**empty)
    assert len(query_rows(db_path, "SELECT * FROM search_opens")) == 1


def test_a_change_of_note_id_moves_its_place_in_logged_results(garden, db_path):
    """A note that gains a frontmatter `id` gets a new note_id: its opens and search pairs moved,
    the logged results kept the old id, so `usage forget --all` left the pairs it had taught."""
    with _service(db_path) as owner:
        _open_after(owner, QUERY, "Kompost.md")
        garden.write("Kompost.md", "---\nid: kompost-1\n---\n# Kompost\nKompost für Tomaten im Garten, mit etwas"
                                   " Wasser feucht halten.\n")
        owner.run_job("index", steps=["import"], vault=garden.root)
        assert any("kompost-1" in results for (results,) in query_rows(db_path, "SELECT results FROM search_log"))
        entry = next(r for r in owner.search(QUERY, SearchOptions(log=False)).results if r.path == "Kompost.md")
        assert entry.note_id == "kompost-1" and "memory" in entry.explain
        owner.usage_forget(everything=True)
    assert query_rows(db_path, "SELECT * FROM search_pairs") == []


def test_an_agent_cannot_tell_a_past_query_by_typing_it(garden, db_path):
    """Allowed the owner's history, an agent typing the owner's exact query got the opened note
    lifted fully (shared words), typing anything else less: a guess-and-watch oracle for what the
    owner searched. Two logs alike but for the past query's text must look the same to it."""
    partial = {"memory_min_evidence": 0.4, "memory_rank_penalty": 0.0}  # five notes: lend from some overlap
    seen = []
    for past_query in (QUERY, "Blumenerde Licht Fensterbank"):
        with _service(db_path) as owner:
            shown = [r.log_key for r in owner.search(QUERY, SearchOptions(log=False)).results]
            owner.record_open(past_query, "hybrid", shown, "Gießkanne.md", "enter")
        with _service(db_path, audience=Audience.AGENT, privacy=AGENT_MEMORY, search=partial) as agent:
            response = agent.search(QUERY, SearchOptions(log=False))
        assert any("memory" in r.explain for r in response.results)  # it still gets what the owner opened
        seen.append(json.dumps(response.as_dict(), ensure_ascii=False, sort_keys=True))
        with _service(db_path) as owner:
            owner.usage_forget(everything=True)
    assert seen[0] == seen[1]


def _repeat_case(name: str) -> tuple[list, list]:
    """(golden, repeat) entries of the sample files, spoilt as `name` says."""
    from conftest import REPO

    golden = json.loads((REPO / "tests" / "golden" / "sample_vault.json").read_text(encoding="utf-8"))
    repeat = json.loads((REPO / "tests" / "golden" / "sample_repeat.json").read_text(encoding="utf-8"))
    first = repeat[0]
    spoilt = {
        "empty repeat list": (golden, []),
        "empty golden list": ([], repeat),
        "repeat without id": (golden, [{k: v for k, v in first.items() if k != "id"}]),
        "repeat id twice": (golden, repeat + [first]),
        "repeat id of a golden query": (golden, [{**first, "id": first["first_id"]}]),
        "first_id a list": (golden, [{**first, "first_id": [first["first_id"]]}]),
        "golden id a list": ([{**golden[0], "id": [golden[0]["id"]]}] + golden[1:], repeat),
        "relevant_paths a string": (golden, [{**first, "relevant_paths": first["relevant_paths"][0]}]),
        "partial_paths numbers": (golden, [{**first, "partial_paths": [1, 2]}]),
        "repeat path not in the vault": (golden, [{**first, "relevant_paths": ["Nope/Absent.md"]}]),
        "golden path not in the vault": ([{**g, "relevant_paths": ["Nope.md"]} if g["id"] == first["first_id"]
                                          else g for g in golden], [first]),
    }
    return spoilt[name]


@pytest.mark.parametrize("name", ["empty repeat list", "empty golden list", "repeat without id", "repeat id twice",
                                  "repeat id of a golden query", "first_id a list", "golden id a list",
                                  "relevant_paths a string", "partial_paths numbers",
                                  "repeat path not in the vault", "golden path not in the vault"])
def test_eval_repeat_refuses_malformed_files_clearly(tmp_path, name):
    """Before: KeyError/TypeError tracebacks, a NoteNotFound after the whole index was built, or
    figures measured against a path read letter by letter or a note the vault does not have."""
    from conftest import SAMPLE_VAULT

    golden, repeat = _repeat_case(name)
    golden_path, repeat_path = tmp_path / "golden.json", tmp_path / "repeat.json"
    golden_path.write_text(json.dumps(golden), encoding="utf-8")
    repeat_path.write_text(json.dumps(repeat), encoding="utf-8")
    with _service(tmp_path / "unused.db") as owner:
        with pytest.raises(InputError) as refused:
            owner.evaluate("repeat", golden_path, vault=SAMPLE_VAULT, repeat=repeat_path,
                           scratch_db=tmp_path / "scratch.db")
    assert str(golden_path) in str(refused.value) or str(repeat_path) in str(refused.value)


def test_an_empty_golden_set_or_a_repeat_without_id_is_a_usage_error_on_the_command_line(tmp_path, capsys):
    from conftest import SAMPLE_VAULT

    from mindtui.evaluation.commands import load_golden

    empty = tmp_path / "empty.json"
    empty.write_text("[]", encoding="utf-8")
    with pytest.raises(InputError, match="no queries"):  # eval golden measured nothing and said 0.000
        load_golden(empty)
    golden, repeat = _repeat_case("repeat without id")
    golden_path, repeat_path = tmp_path / "golden.json", tmp_path / "repeat.json"
    golden_path.write_text(json.dumps(golden), encoding="utf-8")
    repeat_path.write_text(json.dumps(repeat), encoding="utf-8")
    assert main(["--db", str(tmp_path / "unused.db"), "eval", "repeat", str(golden_path), str(repeat_path),
                 "--vault", str(SAMPLE_VAULT), "--scratch-db", str(tmp_path / "scratch.db")]) == 2
    assert "needs an \"id\"" in capsys.readouterr().err


@pytest.mark.parametrize("forget", [{"everything": True}, {"note": "Gießkanne"}, {"query": QUERY}])
def test_forgetting_opens_forgets_the_settings_fitted_to_them(garden, db_path, capsys, forget):
    """The nightly fit's values came from the opens: after `usage forget` they kept ranking every
    search (`mindtui status` still listed them). A forget that removes no open leaves them."""
    from mindtui.store.meta import set_meta

    conn = open_database(db_path)
    with conn:
        set_meta(conn, "search_learnt", json.dumps({"values": {"memory_weight": 2.0}}))
    conn.close()
    with _service(db_path) as owner:
        _open_after(owner, QUERY, "Gießkanne.md")
        assert owner.usage_forget(query="nie gesucht")["learnt_settings_forgotten"] is False
        assert owner.status()["learnt_settings"] == {"search.memory_weight": 2.0}
        assert owner.usage_forget(**forget)["learnt_settings_forgotten"] is True
        assert owner.status()["learnt_settings"] == {}
    assert query_rows(db_path, "SELECT value FROM meta WHERE key = 'search_learnt'") == []


def _agent_sees(db_path, query: str) -> str:
    partial = {"memory_min_evidence": 0.4, "memory_rank_penalty": 0.0}  # five notes: lend from some overlap
    with _service(db_path, audience=Audience.AGENT, privacy=AGENT_MEMORY, search=partial) as agent:
        response = agent.search(query, SearchOptions(log=False))
    assert any("memory" in r.explain for r in response.results)
    return json.dumps(response.as_dict(), ensure_ascii=False, sort_keys=True)


def test_a_hidden_note_in_a_past_searchs_results_moves_nothing_for_an_agent(garden, db_path, tmp_path):
    """The owner's logged results hold the private Geheim.md (2nd): for an agent the notes after
    it stood one place lower than without it, so the past search overlapped less and lent less.
    Built twice, with and without the private note; opens of it (not lent to an agent) as well."""
    import shutil

    from conftest import Vault, run_import

    without = Vault(tmp_path / "without")
    shutil.copytree(garden.root, without.root, dirs_exist_ok=True)
    without.remove("Geheim.md")
    other_db = tmp_path / "without.db"
    run_import(other_db, without.root)
    for db, hidden in ((db_path, True), (other_db, False)):
        with _service(db) as owner:
            _open_after(owner, QUERY, "Gießkanne.md")
            if hidden:
                _open_after(owner, QUERY, "Geheim.md")
                _open_after(owner, "Geheimrezept", "Geheim.md")
    assert _agent_sees(db_path, QUERY) == _agent_sees(other_db, QUERY)


PAST_QUERY = QUERY + " Regentonne"  # a word no note holds: it could reach an agent only from the log


def _ownerquery_rows(db_path) -> dict:
    return {"opens": query_rows(db_path, "SELECT * FROM search_opens"),
            "pairs": query_rows(db_path, "SELECT * FROM search_pairs"),
            "owner": query_rows(db_path, "SELECT * FROM search_log WHERE audience = 'owner'"),
            "meta": query_rows(db_path, "SELECT * FROM meta"),
            "agent_vectors": query_rows(db_path, "SELECT search_id FROM search_log WHERE audience = 'agent'"
                                            " AND (query_vector IS NOT NULL OR vector_model IS NOT NULL)")}


async def test_the_mcp_server_neither_records_nor_tells_a_past_query(garden, db_path, monkeypatch):
    """`mindtui mcp` with privacy.agent_uses_history: every tool, memory lent, and not a row of
    the owner's usage written or a word of a past query told."""
    import os
    import sys

    from conftest import REPO
    from mcp import Client, StdioServerParameters

    with _service(db_path) as owner:
        _open_after(owner, PAST_QUERY, "Gießkanne.md")
    before = _ownerquery_rows(db_path)
    monkeypatch.setenv("MINDTUI_PRIVACY__AGENT_USES_HISTORY", "true")
    monkeypatch.setenv("MINDTUI_SEARCH__MEMORY_MIN_EVIDENCE", "0.0")  # five notes: lend from any overlap
    monkeypatch.setenv("MINDTUI_SEARCH__MEMORY_RANK_PENALTY", "0.0")
    monkeypatch.setenv("MINDTUI_MODELS__EMBEDDING_PATH", str(db_path.parent / "absent.gguf"))
    params = StdioServerParameters(command=sys.executable, args=["-m", "mindtui", "mcp", "--db", str(db_path)],
                                   env=dict(os.environ), cwd=str(REPO))
    said = []
    async with Client(params, read_timeout_seconds=120) as client:
        for tool, arguments in (("search", {"query": QUERY}), ("search", {"query": "Regentonne"}),
                                ("context_pack", {"query": QUERY}), ("get_note", {"note": "Gießkanne"}),
                                ("neighbors", {"note": "Gießkanne"}), ("knowledge_search", {"query": QUERY})):
            result = await client.call_tool(tool, arguments)
            said.append(result.content[0].text)
    assert json.loads(said[0])["results"][0]["path"] == "Gießkanne.md"  # lent: the owner opened it after a like search
    assert not any("Regentonne" in text for text in said[:1] + said[2:])
    assert "Regentonne" not in said[1].replace('"query": "Regentonne"', "")
    assert _ownerquery_rows(db_path) == before
    assert query_rows(db_path, "SELECT count(*) FROM search_log WHERE audience = 'agent'")[0][0] >= 1  # logged apart


def test_memory_follows_a_rename_and_forget_by_the_new_name(garden, db_path):
    with _service(db_path) as owner:
        _open_after(owner, QUERY, "Schuppen.md")
        garden.rename("Schuppen.md", "Hof/Geräteschuppen.md")
        owner.run_job("index", steps=["import"], vault=garden.root)
        lifted = owner.search(QUERY, SearchOptions(log=False)).results[0]
        assert lifted.path == "Hof/Geräteschuppen.md" and "memory" in lifted.explain
        assert owner.usage_forget(note="Hof/Geräteschuppen.md")["opens"] == 1
        assert not any("memory" in r.explain for r in owner.search(QUERY, SearchOptions(log=False)).results)


def test_a_pasted_page_as_past_query_is_clipped_in_the_explanation(garden, db_path):
    """The whole past query went into every explanation it lent to (200 KB after a pasted page)."""
    pasted = QUERY + "\n" + " ".join(["Tomaten"] * 5000)
    with _service(db_path) as owner:
        _open_after(owner, pasted, "Gießkanne.md")
        why = next(r.explain["memory"]["why"] for r in owner.search(QUERY, SearchOptions(log=False)).results
                   if r.path == "Gießkanne.md")
    assert why.startswith(f"opened after a similar search: '{QUERY} Tomaten") and "\n" not in why
    assert len(why) < 130 and "…' (1×, today)" in why


def test_searches_after_a_forget_still_refresh_knowledge_importance(garden, db_path):
    """Search ids are row ids: after `usage forget --all` they start at 1 again, below the
    nightly's watermark of searches already read, so no later search raised an item's importance
    until the log had grown past the forgotten ones."""
    proposal = {"schema": "knowledge_proposal.v1", "type": "fact", "title": "Tomaten brauchen Sonne",
                "quote": "Tomaten brauchen Wasser, Sonne und einen Garten."}

    def importance() -> float:
        return query_rows(db_path, "SELECT importance FROM knowledge_items")[0][0]

    with _service(db_path) as owner:
        owner.knowledge_submit(proposal)
        assert any(r.kind == "knowledge" for r in owner.search("Tomaten Sonne").results)
        owner.search("Tomaten Sonne")
        owner.run_job("nightly", steps=["consolidate"], vault=garden.root)
        owner.usage_forget(everything=True)
        owner.search("Tomaten Sonne")
        before = importance()
        owner.run_job("nightly", steps=["consolidate"], vault=garden.root)
    assert importance() > before


def test_an_open_after_a_forgotten_search_is_not_taught_to_the_search_that_took_its_id(garden, db_path):
    """The TUI keeps the search a note was opened from, for `y` and links followed later. After
    `usage forget --all` elsewhere the next logged search took the same id, and the copy taught
    that search's query; with no search there, the open raised instead of saying so."""
    with _service(db_path) as owner:
        first = _open_after(owner, QUERY, "Gießkanne.md")
        shown = owner.search(QUERY, SearchOptions(log=False)).results
        owner.usage_forget(everything=True)
        gone = owner.record_open("", "hybrid", [r.log_key for r in shown], "Gießkanne.md", "copy",
                                 search_id=first.search_id)
        assert gone.open_id is None and gone.notices == ["open not recorded: the search it came from was forgotten"]
        assert owner.search("Spaten Harke").search_id == first.search_id  # the id is taken again
        again = owner.record_open("", "hybrid", [r.log_key for r in shown], "Gießkanne.md", "copy",
                                  search_id=first.search_id)
    assert again.open_id is None
    assert query_rows(db_path, "SELECT * FROM search_opens") == []


def test_a_forgotten_search_stops_lending_on_the_connection_that_forgot_it(garden, db_path):
    """The memory's cache keyed on (last open id, opens, last search id): after `forget --all` on
    the same connection, one new open after another search gave the same key, and the forgotten
    search went on lifting its note."""
    from mindtui.config import load_settings
    from mindtui.search.engine import SearchEngine
    from mindtui.store import search_store, usage_store

    conn = open_database(db_path)
    try:
        ids = dict(conn.execute("SELECT path, note_id FROM notes").fetchall())
        engine = SearchEngine(conn, load_settings(), None)

        def lifted(query: str) -> list[str]:
            return [r.path for r in engine.search(query, SearchOptions(log=False)).results if "memory" in r.explain]

        for query, path in ((QUERY, "Schuppen.md"), ("Spaten Harke", "Kompost.md")):
            search_id = search_store.log_search(conn, query, "hybrid", [ids[path]], "owner", learn_pairs=True)
            usage_store.record_open(conn, search_id, ids[path], 1, "enter")
            assert lifted(query) == [path]
            usage_store.forget(conn, everything=True)
        assert lifted(QUERY) == []
    finally:
        conn.close()


def test_forget_all_forgets_the_pairs_of_searches_the_retention_dropped(garden, db_path):
    """retention.search_log_days drops old searches and keeps the pairs they taught; `usage
    forget --all` took back only the pairs of searches still in the log, so "found together"
    neighbours of searches long gone stayed."""
    with _service(db_path) as owner:
        _open_after(owner, QUERY, "Gießkanne.md")
        conn = open_database(db_path)
        with conn:
            conn.execute("UPDATE search_log SET searched_at = '2020-01-01T00:00:00+00:00'")
        conn.close()
        owner.run_job("nightly", steps=["graph"], vault=garden.root)
        assert query_rows(db_path, "SELECT * FROM search_log") == [] and query_rows(db_path, "SELECT * FROM search_pairs")
        assert owner.usage_forget(everything=True)["pairs_unlearnt"] > 0
        assert not owner.neighbours("Gießkanne").groups.get("search")
    assert query_rows(db_path, "SELECT * FROM search_pairs") == []


def test_a_forgotten_query_is_not_left_readable_in_the_file(garden, db_path):
    """SQLite leaves a deleted row's bytes in the page's free space and in the write-ahead log:
    `strings mindtui.db` showed the query after `usage forget --all`."""
    secret = "Zuckerwatte Geheimwort Tomaten"
    with _service(db_path) as owner:
        _open_after(owner, secret, "Schuppen.md")
        assert owner.usage_forget(everything=True)["searches"] == 1
        files = [p for p in db_path.parent.iterdir() if p.name.startswith(db_path.name)]
        assert all(secret.encode() not in p.read_bytes() for p in files), [p.name for p in files]


def test_the_retention_leaves_no_forgotten_query_readable_in_the_file(garden, db_path):
    secret = "Zuckerwatte Geheimwort Tomaten"
    with _service(db_path) as owner:
        _open_after(owner, secret, "Schuppen.md")
        conn = open_database(db_path)
        with conn:
            conn.execute("UPDATE search_log SET searched_at = '2020-01-01T00:00:00+00:00'")
            conn.execute("UPDATE search_opens SET opened_at = '2020-01-01T00:00:00+00:00'")
        conn.close()
        report = owner.run_job("nightly", steps=["graph"], vault=garden.root).steps[0].report
        assert report["searches_forgotten"] == 1
        files = [p for p in db_path.parent.iterdir() if p.name.startswith(db_path.name)]
        assert all(secret.encode() not in p.read_bytes() for p in files), [p.name for p in files]
