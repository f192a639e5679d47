"""The knowledge lifecycle: callouts in notes -> items (edit = supersede, delete = stale), the nightly
`consolidate` and `gaps` steps (each rule), the consent gate, and idempotent nightly runs."""

from __future__ import annotations

import datetime
import json

import pytest

from mindtui.config import load_settings
from mindtui.jobs.runner import run_job
from mindtui.knowledge.consolidate import consolidate
from mindtui.knowledge.proposal import Source, parse_proposal
from mindtui.knowledge.writer import submit
from mindtui.store import knowledge_store, open_database

NIGHT = ["import", "graph", "consolidate", "gaps"]  # the nightly job without the model

DECISION = "> [!decision] We keep the index in SQLite\n> about: [[Mindtui]]\n> One file, no server.\n"
FILES = {
    "Personen/Emre.md": "# Emre\n\nEmre leads sales.\n",
    "Personen/Ada.md": "# Ada\n\nAda writes code. Works on [[Mindtui]].\n",
    "Personen/Bob.md": "# Bob\n\nBob. See [[Ada]].\n",
    "Projekte/Mindtui.md": "# Mindtui\n\nA second brain. With [[Ada]] and [[Emre]].\n",
    "Notizen/Meeting.md": f"# Meeting\n\nWe met.\n\n{DECISION}\n> [!preference] Emre wants short mails\n"
                          "> about: [[Emre]]\n\n> [!note] Not knowledge\n> at all\n",
    "Notizen/Secret.md": "---\nai_processing: none\n---\n# Secret\n\n> [!fact] Emre earns a lot\n> about: [[Emre]]\n",
    "Personen/Silent.md": "---\nai_processing: none\n---\n# Silent\n\nA person nobody may ask about.\n",
}


@pytest.fixture
def settings(db_path):
    return load_settings(overrides={"db": str(db_path)})


@pytest.fixture
def kvault(vault):
    for path, text in FILES.items():
        vault.write(path, text, dedent=False)
    return vault


def run(settings, vault, steps=("import",)):
    result = run_job("index", settings, db_path=settings.db_path, vault=vault.root, steps=list(steps))
    assert result.ok, [(s.step, s.error) for s in result.steps]
    return {s.step: s.report for s in result.steps}


def rows(settings, sql, args=()):
    conn = open_database(settings.db_path)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def items(settings):
    """title -> (type, status, is_current, superseded_by, stale_since is set, source_chunk_seq)"""
    return {r[0]: r[1:] for r in rows(settings, "SELECT title, type, status, is_current, superseded_by,"
                                                " stale_since IS NOT NULL, source_chunk_seq FROM knowledge_items")}


def cards(settings, kind, status="open"):
    return [json.loads(p) for (p,) in rows(settings, "SELECT payload FROM curation_items WHERE kind = ? AND status = ?"
                                                     " ORDER BY importance DESC, item_id", (kind, status))]


def snapshot(settings):
    return {table: rows(settings, f"SELECT * FROM {table} ORDER BY 1")
            for table in ("knowledge_items", "knowledge_sources", "knowledge_decisions", "curation_items", "meta")}


# -- callouts ------------------------------------------------------------------------------

def test_callouts_become_items_with_the_note_and_chunk_as_source(settings, kvault):
    report = run(settings, kvault)["import"]["knowledge"]
    assert report["callouts"] == 2 and report["decisions"] == {"add": 2}
    (row,) = rows(settings, "SELECT k.type, k.status, k.source_type, k.source_id, k.source_note_id, k.source_chunk_seq,"
                            " k.source_hash IS NOT NULL, a.path, k.body FROM knowledge_items k JOIN notes n ON"
                            " n.note_id = k.source_note_id JOIN notes a ON a.note_id = k.about_note_id"
                            " WHERE k.title = 'We keep the index in SQLite'")
    meeting = rows(settings, "SELECT note_id FROM notes WHERE path = 'Notizen/Meeting.md'")[0][0]
    assert row[:5] == ("decision", "draft", "note", f"{meeting}#callout:decision:1", meeting)
    chunk_text = rows(settings, "SELECT text FROM chunks WHERE note_id = ? AND seq = ?", (meeting, row[5]))[0][0]
    assert "[!decision] We keep the index in SQLite" in chunk_text
    assert row[6:] == (1, "Projekte/Mindtui.md", "One file, no server.")


def test_consent_no_item_from_an_ai_processing_none_note(settings, kvault):
    run(settings, kvault)
    assert "Emre earns a lot" not in items(settings)
    assert rows(settings, "SELECT count(*) FROM knowledge_decisions WHERE source_id LIKE '%callout:fact%'") == [(0,)]


def test_a_second_import_of_unchanged_notes_changes_nothing(settings, kvault):
    run(settings, kvault)
    before = snapshot(settings)
    report = run(settings, kvault)["import"]["knowledge"]
    assert report["decisions"] == {} and report["unchanged"] == 2
    assert snapshot(settings) == before


def test_an_edited_callout_supersedes_its_item_and_a_moved_one_only_moves(settings, kvault):
    run(settings, kvault)
    text = FILES["Notizen/Meeting.md"]
    kvault.write("Notizen/Meeting.md", "# Meeting\n\n## Earlier\n\n" + "Filler words here. " * 200 + "\n\n## Now\n\n"
                 + text.split("\n\n", 1)[1].replace("in SQLite", "in SQLite (WAL mode)"), dedent=False)
    report = run(settings, kvault)["import"]["knowledge"]
    assert report["decisions"] == {"supersede": 1} and report["unchanged"] == 1 and report["moved"] == 1
    found = items(settings)
    old, new = found["We keep the index in SQLite"], found["We keep the index in SQLite (WAL mode)"]
    new_id = rows(settings, "SELECT item_id FROM knowledge_items WHERE title LIKE '%WAL mode%'")[0][0]
    assert old[1:4] == ("superseded", 0, new_id) and new[1:3] == ("draft", 1)
    assert found["Emre wants short mails"][5] > 0  # the moved callout's item follows it to its new chunk


def test_a_deleted_callout_marks_its_item_stale_with_a_card_and_coming_back_clears_it(settings, kvault):
    run(settings, kvault)
    kvault.write("Notizen/Meeting.md", FILES["Notizen/Meeting.md"].replace(DECISION, ""), dedent=False)
    report = run(settings, kvault)["import"]["knowledge"]
    assert report["stale"] == 1 and report["curation"]["kinds"]["stale"]["new"] == 1
    assert items(settings)["We keep the index in SQLite"][1:5] == ("draft", 1, None, 1)  # still current: flagged
    (card,) = cards(settings, "stale")
    assert card["title"] == "We keep the index in SQLite" and card["source_path"] == "Notizen/Meeting.md"
    again = run(settings, kvault)["import"]["knowledge"]  # nothing new while it stays deleted
    assert again["stale"] == 0 and len(cards(settings, "stale")) == 1
    kvault.write("Notizen/Meeting.md", FILES["Notizen/Meeting.md"], dedent=False)
    back = run(settings, kvault)["import"]["knowledge"]
    assert back["restored"] == 1 and items(settings)["We keep the index in SQLite"][4] == 0
    assert cards(settings, "stale") == [] and len(cards(settings, "stale", "resolved")) == 1


def test_a_deleted_note_marks_its_callout_items_stale(settings, kvault):
    run(settings, kvault)
    kvault.remove("Notizen/Meeting.md")
    run(settings, kvault)
    assert {c["title"] for c in cards(settings, "stale")} == {"We keep the index in SQLite", "Emre wants short mails"}
    assert {c["source_path"] for c in cards(settings, "stale")} == {None}


# -- consolidation -------------------------------------------------------------------------

def _conn(settings):
    return open_database(settings.db_path)


def _submit(conn, settings, source, **fields):
    data = {"schema": "knowledge_proposal.v1", "type": "fact", "title": "Emre leads sales", "about": "Emre",
            "quote": "Emre leads sales.", **fields}
    return submit(conn, settings, parse_proposal(data), source)


def _clone(conn, item_id, **changes):
    """A second row with the same statement (what a forced add or an old bug may leave behind)."""
    item = knowledge_store.get_item(conn, item_id).as_dict()
    values = {k: v for k, v in item.items() if k != "item_id"}
    values.update(changes)
    with conn:
        fts = knowledge_store.fts_text(values["title"], values["body"], None)
        return knowledge_store.insert_item(conn, values, fts)


def test_exact_duplicates_are_superseded_into_the_confirmed_one(settings, kvault):
    run(settings, kvault)
    conn = _conn(settings)
    try:
        first = _submit(conn, settings, Source.agent("a")).item_id
        twin = _clone(conn, first, status="confirmed", source_id="agent:b")
        third = _clone(conn, first, source_id="agent:c")
        report = consolidate(conn, settings)
        assert report.duplicates_superseded == 2
        got = dict((r[0], r[1:]) for r in conn.execute(
            "SELECT item_id, is_current, superseded_by, status FROM knowledge_items WHERE item_id IN (?, ?, ?)",
            (first, twin, third)))
        assert got == {first: (0, twin, "superseded"), twin: (1, None, "confirmed"), third: (0, twin, "superseded")}
        sources = {r[0] for r in conn.execute("SELECT source_id FROM knowledge_sources WHERE item_id = ?", (twin,))}
        assert {"agent:a", "agent:c"} <= sources  # their sources count for the one kept
        ended = conn.execute("SELECT count(*) FROM knowledge_fts WHERE rowid IN (?, ?)", (first, third)).fetchone()
        assert ended == (0,)  # out of the full text
        assert consolidate(conn, settings).duplicates_superseded == 0
    finally:
        conn.close()


def test_a_draft_is_confirmed_by_two_independent_sources_not_by_one_source_twice(settings, kvault):
    run(settings, kvault)
    conn = _conn(settings)
    try:
        one = _submit(conn, settings, Source.agent("a")).item_id
        assert _submit(conn, settings, Source.agent("a")).decision == "noop"  # the same source again
        lone = _submit(conn, settings, Source.note(_note(conn, "Personen/Ada.md"), "x:1"),
                       title="Ada writes code", about="Ada").item_id
        _submit(conn, settings, Source.note(_note(conn, "Personen/Ada.md"), "x:2"), title="Ada writes code",
                about="Ada")
        assert consolidate(conn, settings).confirmed == 0  # two keys of one note are one source
        assert _submit(conn, settings, Source.agent("b")).decision == "noop"
        report = consolidate(conn, settings)
        assert report.confirmed == 1
        status = dict(conn.execute("SELECT item_id, status FROM knowledge_items WHERE item_id IN (?, ?)", (one, lone)))
        assert status == {one: "confirmed", lone: "draft"}
        importance = conn.execute("SELECT importance FROM knowledge_items WHERE item_id = ?", (one,)).fetchone()[0]
        assert importance == pytest.approx(0.5 + settings.knowledge.importance_boost)
        assert consolidate(conn, settings).confirmed == 0
    finally:
        conn.close()


def _note(conn, path):
    return conn.execute("SELECT note_id FROM notes WHERE path = ?", (path,)).fetchone()[0]


def test_an_item_whose_source_chunk_changed_is_flagged_stale_and_unflagged_when_it_is_back(settings, kvault):
    run(settings, kvault)
    conn = _conn(settings)
    try:
        ada = _note(conn, "Personen/Ada.md")
        chunk_hash = knowledge_store.chunk_hash(conn, ada, 0)
        item = _submit(conn, settings, Source.note(ada, "chunk:0", 0, chunk_hash), title="Ada writes code",
                       about="Ada").item_id
    finally:
        conn.close()
    kvault.write("Personen/Ada.md", "# Ada\n\nAda manages people now.\n", dedent=False)
    report = run(settings, kvault, ["import", "consolidate"])["consolidate"]
    assert report["stale_flagged"] == 1 and report["curation"]["kinds"]["stale"]["new"] == 1
    assert cards(settings, "stale")[0]["item_id"] == item
    assert run(settings, kvault, ["consolidate"])["consolidate"]["stale_flagged"] == 0
    kvault.write("Personen/Ada.md", FILES["Personen/Ada.md"], dedent=False)
    report = run(settings, kvault, ["import", "consolidate"])["consolidate"]
    assert report["stale_cleared"] == 1 and cards(settings, "stale") == []


def test_consent_no_stale_check_of_an_ai_processing_none_note(settings, kvault):
    run(settings, kvault)
    conn = _conn(settings)
    try:
        ada = _note(conn, "Personen/Ada.md")
        _submit(conn, settings, Source.note(ada, "chunk:0", 0, knowledge_store.chunk_hash(conn, ada, 0)),
                title="Ada writes code", about="Ada")
    finally:
        conn.close()
    kvault.write("Personen/Ada.md", "---\nai_processing: none\n---\n# Ada\n\nChanged.\n", dedent=False)
    assert run(settings, kvault, ["import", "consolidate"])["consolidate"]["stale_flagged"] == 0


def test_importance_decays_by_whole_days_and_a_second_run_changes_nothing(settings, kvault):
    run(settings, kvault)
    conn = _conn(settings)
    try:
        item = _submit(conn, settings, Source.owner()).item_id
        then = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=90, hours=5)).isoformat(
            timespec="seconds")
        with conn:
            conn.execute("UPDATE knowledge_items SET importance = 0.8, importance_at = ? WHERE item_id = ?",
                         (then, item))
        assert consolidate(conn, settings).decayed >= 1
        value, at = conn.execute("SELECT importance, importance_at FROM knowledge_items WHERE item_id = ?",
                                 (item,)).fetchone()
        assert value == pytest.approx(0.4)  # the default half-life is 90 days
        assert datetime.datetime.fromisoformat(at) < datetime.datetime.now(datetime.timezone.utc) - \
            datetime.timedelta(hours=4)  # the part of a day not counted yet stays
        assert consolidate(conn, settings).decayed == 0
        assert conn.execute("SELECT importance FROM knowledge_items WHERE item_id = ?", (item,)).fetchone()[0] == value
    finally:
        conn.close()


def test_owner_searches_that_show_an_item_refresh_its_importance_once(settings, kvault):
    run(settings, kvault)
    conn = _conn(settings)
    try:
        item = _submit(conn, settings, Source.owner()).item_id
        with conn:
            for audience in ("owner", "agent"):
                conn.execute("INSERT INTO search_log (searched_at, query, mode, results, audience) VALUES"
                             " ('2026-11-30T00:00:00+00:00', 'emre', 'hybrid', ?, ?)",
                             (json.dumps(["x", f"knowledge:{item}"]), audience))
        assert consolidate(conn, settings).refreshed_by_search == 1  # the agent's search does not count
        value = conn.execute("SELECT importance FROM knowledge_items WHERE item_id = ?", (item,)).fetchone()[0]
        assert value == pytest.approx(0.5 + settings.knowledge.importance_boost)
        assert consolidate(conn, settings).refreshed_by_search == 0
    finally:
        conn.close()


# -- gaps ----------------------------------------------------------------------------------

def test_gap_questions_ask_about_linked_entities_first_at_most_the_configured_number(db_path, kvault):
    settings = load_settings(overrides={"db": str(db_path), "knowledge": {"max_gap_questions": 2}})
    run(settings, kvault, NIGHT)
    asked = [c["note"]["path"] for c in cards(settings, "gap_question")]
    # Emre is linked from three notes, Ada and Mindtui from two each, Bob from none; Silent is never asked about.
    assert asked[0] == "Personen/Emre.md" and set(asked[1:]) < {"Personen/Ada.md", "Projekte/Mindtui.md"}
    assert len(asked) == 2
    assert run(settings, kvault, NIGHT)["gaps"]["new_total"] == 0
    paths = [c["note"]["path"] for c in cards(settings, "gap_question") + cards(settings, "gap_question", "snoozed")]
    assert "Personen/Silent.md" not in paths


def test_consent_no_gap_question_about_an_ai_processing_none_entity(db_path, kvault):
    settings = load_settings(overrides={"db": str(db_path), "knowledge": {"max_gap_questions": 50}})
    run(settings, kvault, NIGHT)
    asked = {c["note"]["path"] for c in cards(settings, "gap_question")}
    assert asked == {"Personen/Ada.md", "Personen/Bob.md", "Personen/Emre.md", "Projekte/Mindtui.md"}


def test_a_confirmed_item_about_an_entity_closes_its_gap_question(db_path, kvault):
    settings = load_settings(overrides={"db": str(db_path), "knowledge": {"max_gap_questions": 50}})
    run(settings, kvault, NIGHT)
    conn = _conn(settings)
    try:
        _submit(conn, settings, Source.owner(), title="Bob reviews everything", about="Bob")
    finally:
        conn.close()
    report = run(settings, kvault, ["gaps"])["gaps"]
    assert report["closed_total"] == 1
    assert "Personen/Bob.md" not in {c["note"]["path"] for c in cards(settings, "gap_question")}


def test_the_nightly_job_twice_creates_no_duplicate_card_and_changes_nothing(settings, kvault):
    run(settings, kvault, NIGHT)
    before = snapshot(settings)
    second = run(settings, kvault, NIGHT)
    assert second["import"]["knowledge"]["decisions"] == {}
    assert {k: v for k, v in second["consolidate"].items() if k != "curation"} == dict.fromkeys(
        ("duplicates_superseded", "confirmed", "stale_flagged", "stale_cleared", "decayed", "refreshed_by_search"), 0)
    assert snapshot(settings) == before


def test_an_edit_that_repeats_another_item_corroborates_it_and_the_old_item_goes_stale_at_once(settings, vault):
    vault.write("Personen/Ada.md", "# Ada\n\nAda.\n", dedent=False)
    vault.write("Notizen/Other.md", "# Other\n\n> [!fact] Ada writes code\n> about: [[Ada]]\n", dedent=False)
    vault.write("Notizen/Meeting.md", "# Meeting\n\n> [!fact] Ada writes tests\n> about: [[Ada]]\n", dedent=False)
    run(settings, vault)
    vault.write("Notizen/Meeting.md", "# Meeting\n\n> [!fact] Ada writes code\n> about: [[Ada]]\n", dedent=False)
    report = run(settings, vault)["import"]["knowledge"]
    assert report["decisions"] == {"noop": 1} and report["stale"] == 1
    found = items(settings)
    assert found["Ada writes tests"][1:5] == ("draft", 1, None, 1) and found["Ada writes code"][4] == 0
    before = snapshot(settings)
    assert run(settings, vault)["import"]["knowledge"]["decisions"] == {}
    assert snapshot(settings) == before
    run(settings, vault, ["consolidate"])  # two notes state it: confirmed
    assert items(settings)["Ada writes code"][1] == "confirmed"
