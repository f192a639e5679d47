"""Words in half the full-text rows or more are left out of the owner's ranked query (store.fts_weightless):
the same results, and the whole query again when the other words find too few rows."""

from __future__ import annotations

from mindtui.search.query import parse_query
from mindtui.store import open_database
from mindtui.store import search_store

from conftest import run_import


def vault_with_a_template_line(vault):
    # "Vorlage" is in every note: BM25 gives it the 1e-6 floor. "Apfel" is in a few.
    for i in range(12):
        fruit = " Apfel Apfel" if i % 3 == 0 else ""
        vault.write(f"Notiz{i:02d}.md", f"# Notiz {i}\n\nVorlage zeile.{fruit} Eigenes Wort{i}.\n")


def traced(conn, call):
    """call()'s result, and the MATCH expressions of the ranked full-text queries it ran."""
    seen = []
    conn.exec_trace = lambda cursor, sql, bindings: seen.append((sql, bindings)) or True
    try:
        return call(), [bindings[0] for sql, bindings in seen if "ORDER BY score" in sql]
    finally:
        conn.exec_trace = None


def pruned_and_whole(db_path, limit):
    """The owner's ranked hits of "Vorlage Apfel", the MATCH expressions asked, and the whole query's hits."""
    expression = parse_query("Vorlage Apfel").fts
    conn = open_database(db_path)
    try:
        hits, asked = traced(conn, lambda: search_store.fts_chunks(conn, expression, limit))
        return hits, asked, search_store._fts_chunks(conn, expression, limit, None, None, None, False)
    finally:
        conn.close()


def test_a_word_in_every_row_is_left_out_and_the_ranking_is_the_same(vault, db_path):
    vault_with_a_template_line(vault)
    run_import(db_path, vault.root)
    hits, asked, whole = pruned_and_whole(db_path, 3)
    assert [h.note_id for h in hits] == [h.note_id for h in whole]
    assert [round(h.score, 4) for h in hits] == [round(h.score, 4) for h in whole]
    assert asked == ['"apfel"*'], asked  # ranked without the weightless word, once


def test_the_whole_query_runs_when_the_other_words_find_too_few_rows(vault, db_path):
    vault_with_a_template_line(vault)
    run_import(db_path, vault.root)
    hits, asked, whole = pruned_and_whole(db_path, 8)  # four notes have Apfel: too few for 8
    assert len(hits) == 8 and [h.note_id for h in hits] == [h.note_id for h in whole]
    assert asked[-1] == parse_query("Vorlage Apfel").fts


def test_an_agent_gets_the_whole_query_ranked_over_what_it_sees(vault, db_path):
    from mindtui.audience import Audience

    vault_with_a_template_line(vault)
    vault.write("Geheim.md", "---\nprivate: true\n---\nVorlage zeile. Apfel Apfel Apfel.\n")
    run_import(db_path, vault.root)
    expression = parse_query("Vorlage Apfel").fts
    conn = open_database(db_path, audience=Audience.AGENT)
    try:
        hits, asked = traced(conn, lambda: search_store.fts_chunks(conn, expression, 3, restricted=True))
    finally:
        conn.close()
    assert all(h.note_id for h in hits) and len(hits) == 3
    assert asked == [expression]  # nothing left out: its statistics are its own
