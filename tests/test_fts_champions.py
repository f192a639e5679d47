"""Champion lists (store.fts_champions): a query with a phrase in a large share of the rows ranks
a few rows of its list instead of every row, and its answer is still the whole query's, also
after notes were written or deleted since the lists were made. A row's words are read again
(store.fts_rows) and scored to the same bits as FTS5's bm25."""

from __future__ import annotations

import pytest

from mindtui.search.query import parse_query
from mindtui.store import fts_champions, fts_rows, fts_split, fts_weightless, open_database, search_store
from mindtui.store.anchors import fill_indexed
from mindtui.vault.links import anchor_text

from conftest import run_import
from test_fts_split import whole
from test_fts_weightless import traced

LIMITS = (1, 3, 10, 40)
QUERIES = ("Plugin", "Plugi", "Kalender", "Plugin Kalender", "Kalender Zeitplan", "Plugin Zeitplan Kalender",
           "Über Plugin", "Wort7 Plugin")


def plugin_vault(vault):
    # "Plugin" in the title of 2 notes in 5 (every chunk has it: about the same g for all of them,
    # as in a real vault), in the text of some others; "Kalender" in 1 in 6; "Zeitplan" in 3.
    for i in range(90):
        title = f"Plugin {i}" if i % 5 < 2 else f"Notiz {i}"
        body = [f"Eigenes Wort{i}."]
        if i % 6 == 0:
            body.append("Ein Kalender für Termine." + " Kalender" * (i % 4))
        if i % 7 == 3:
            body.append("Dieses Plugin hilft." + " Plugin" * (i % 3))
        if i in (4, 30, 61):
            body.append("Der Zeitplan steht. Über [[Plugin 1]] mehr.")
        sections = "\n\n## Teil zwei\n\nNoch ein Absatz über Plugins." if i % 4 == 0 else ""
        vault.write(f"{title}.md", f"---\naliases: [Erweiterung {i}]\n---\n# {title}\n\n{' '.join(body)}{sections}\n")


@pytest.fixture
def listed(vault, db_path):
    plugin_vault(vault)
    run_import(db_path, vault.root)
    conn = open_database(db_path)
    report = fts_champions.build(conn, min_rows=0, share=0.05, length=30)
    assert report["champion_phrases"] >= 3
    yield conn
    conn.close()


def rank(conn):
    return lambda expression, limit: whole(conn, expression, limit)


def answers_agree(conn, text, limit):
    expression = parse_query(text).fts
    fts_weightless.kept_answers(conn).clear()
    got = fts_split.ranked(conn, expression, limit, rank(conn))
    expected = whole(conn, expression, limit)
    assert [rowid for rowid, _ in got] == [rowid for rowid, _ in expected], (text, limit)
    assert [score for _, score in got] == pytest.approx([score for _, score in expected], rel=1e-12), (text, limit)


def test_a_rows_words_read_again_score_as_fts5_scores_them(vault, db_path):
    plugin_vault(vault)
    vault.write("ID.md", "---\ntitle: 202311291530\n---\nÜbung mit Plugin und Kalender.\n")
    run_import(db_path, vault.root)
    conn = open_database(db_path)
    assert conn.execute("SELECT count(*) FROM note_anchors").fetchone()[0] > 0  # anchor rows are read too
    state = fts_weightless.table_state(conn)
    reader = fts_rows.RowReader(conn)
    for text in QUERIES + ("Übung Termine", "Teil Absatz"):
        terms = parse_query(text).fts.split(" OR ")
        phrases = [fts_rows.phrase_of(conn, t) for t in terms]
        _, matching = fts_weightless.row_counts(conn, terms)
        idfs = [fts_rows.idf(state.rows, matching[t]) for t in terms]
        rows = conn.execute("SELECT rowid, bm25(chunks_fts, 5.0, 3.0, 1.0) FROM chunks_fts WHERE chunks_fts MATCH ?",
                            (" OR ".join(terms),)).fetchall()
        tokens = reader.rows([rowid for rowid, _ in rows])
        assert len(tokens) == len(rows)
        for rowid, score in rows:  # to the same bits
            assert fts_rows.bm25(tokens[rowid], phrases, idfs, state.tokens / state.rows) == score, (text, rowid)
    conn.close()


def test_the_tokenizer_read_again_is_the_full_text_tables(db_path):
    conn = open_database(db_path)
    sql = conn.execute("SELECT sql FROM sqlite_schema WHERE name = 'chunks_fts'").fetchone()[0]
    name, args = fts_rows.TOKENIZER
    assert f"tokenize = '{name} {' '.join(args)}'" in sql
    conn.close()


def test_a_phrase_in_many_rows_is_answered_from_its_list_as_the_whole_query(listed):
    expression = parse_query("Plugin").fts
    assert expression in fts_champions._lists(listed).phrases
    hits, asked = traced(listed, lambda: search_store.fts_chunks(listed, expression, 3))
    assert asked == []  # no row ranked by FTS5: the list's first rows, read again
    assert [h.chunk_id for h in hits] == [rowid for rowid, _ in whole(listed, expression, 3)]
    for text in QUERIES:
        for limit in LIMITS:
            answers_agree(listed, text, limit)


def test_the_lists_answer_a_query_with_a_rarer_word_through_its_rows(listed):
    expression = parse_query("Plugin Zeitplan").fts
    common = [t for t in expression.split(" OR ") if t in fts_champions._lists(listed).phrases]
    assert len(common) == 1
    got = fts_champions.ranked(listed, expression, 3, rank(listed))
    assert got is not None and [r for r, _ in got] == [r for r, _ in whole(listed, expression, 3)]


def test_rows_written_and_deleted_since_the_lists_are_answered_too(listed, vault, db_path):
    expression = parse_query("Plugin").fts
    best_before = whole(listed, expression, 3)
    # A short note named Plugin, with the word over and over: the best row now, in no list.
    vault.write("Plugin Plugin.md", "# Plugin Plugin\n\nPlugin Plugin Plugin.\n")
    # A note whose rows are in the list goes.
    gone = listed.execute("SELECT n.path FROM chunks c JOIN notes n USING (note_id) WHERE c.chunk_id = ?",
                          (best_before[0][0],)).fetchone()[0]
    vault.remove(gone)
    run_import(db_path, vault.root)
    assert listed.execute("SELECT count(*) FROM fts_champion_written").fetchone()[0] > 0
    assert fts_champions.ranked(listed, expression, 3, rank(listed)) is not None  # the list answers
    hits = search_store.fts_chunks(listed, expression, 3)
    expected = whole(listed, expression, 3)
    assert [h.chunk_id for h in hits] == [rowid for rowid, _ in expected]
    assert best_before[0][0] not in [h.chunk_id for h in hits]
    for text in QUERIES:
        for limit in LIMITS:
            answers_agree(listed, text, limit)


def test_too_much_written_since_the_lists_leaves_the_query_to_fts5(listed, vault, db_path, monkeypatch):
    monkeypatch.setattr(fts_champions, "WRITTEN_MAX", 0)
    vault.write("Neu.md", "# Neu\n\nPlugin.\n")
    run_import(db_path, vault.root)
    expression = parse_query("Plugin").fts
    assert fts_champions.ranked(listed, expression, 3, rank(listed)) is None
    answers_agree(listed, "Plugin", 3)


def test_an_anchor_row_older_than_its_kept_text_is_left_to_fts5_until_the_nightly_fills_it(listed):
    listed.execute("UPDATE note_anchors SET indexed = NULL")
    anchors = [-a for (a,) in listed.execute("SELECT anchor_id FROM note_anchors")]
    with pytest.raises(fts_rows.RowUnreadable):
        fts_rows.RowReader(listed).rows(anchors)
    assert fill_indexed(listed, anchor_text) == len(anchors)
    assert len(fts_rows.RowReader(listed).rows(anchors)) == len(anchors)
    for text in QUERIES:
        answers_agree(listed, text, 10)


def test_a_smaller_index_gets_no_lists_and_loses_old_ones(listed):
    assert fts_champions.build(listed, min_rows=10**9)["champion_phrases"] == 0
    assert listed.execute("SELECT count(*) FROM fts_champion_rows").fetchone()[0] == 0
    assert fts_champions.ranked(listed, parse_query("Plugin").fts, 3, rank(listed)) is None


def test_status_tells_the_owner_of_the_lists_and_the_rows_written_since(listed, vault, db_path):
    from mindtui.audience import Audience
    from mindtui.cli_text import status_text
    from mindtui.config import load_settings
    from mindtui.service.status_report import database_status

    settings = load_settings().with_overrides(db=str(db_path))
    vault.write("Neu.md", "# Neu\n\nPlugin.\n")
    run_import(db_path, vault.root)
    owner = database_status(listed, settings, Audience.OWNER, [])
    phrases = listed.execute("SELECT count(*) FROM fts_champion_phrases").fetchone()[0]
    assert owner["fulltext_lists"] == {"phrases": phrases, "rows_written_since": 1, "in_use": True}
    assert f"full-text lists  {phrases:,} common phrases, 1 row written since" in status_text(owner)
    assert "fulltext_lists" not in database_status(listed, settings, Audience.AGENT, [])  # counts hidden notes too
