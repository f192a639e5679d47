"""The owner's full-text query ranks its common words only where its rare words match when that
provably gives the whole query's answer (store.fts_split), and keeps its answers while the table
is unchanged."""

from __future__ import annotations

import pytest

from mindtui.search.query import parse_query
from mindtui.store import fts_split, fts_weightless, open_database, search_store

from conftest import run_import
from test_fts_weightless import traced  # call()'s result and the ranked MATCH expressions it ran

QUERY = "Komet Garten"


def garden_vault(vault):
    # "Garten" in 24 of 60 notes (common: 40 %, below the weightless half); "Komet" in 3 (rare).
    for i in range(60):
        garden = " Der Garten blüht." if i % 5 < 2 else ""
        comet = " Ein Komet zieht vorbei, der Komet leuchtet." if i in (3, 11, 20) else ""
        vault.write(f"Notiz{i:02d}.md", f"# Notiz {i}\n\nEigenes Wort{i}.{garden}{comet}\n")


def whole(conn, expression, limit):
    """The whole query's rows, ranked as fts_chunks ranked every query before fts_split."""
    return conn.execute("SELECT rowid, bm25(chunks_fts, 5.0, 3.0, 1.0) AS score FROM chunks_fts"
                        " WHERE chunks_fts MATCH ? ORDER BY score LIMIT ?", (expression, limit)).fetchall()


@pytest.fixture
def garden(vault, db_path):
    garden_vault(vault)
    run_import(db_path, vault.root)
    conn = open_database(db_path)
    yield conn
    conn.close()


def test_common_words_are_ranked_only_where_rare_ones_match_and_the_answer_is_the_whole_querys(garden):
    expression = parse_query(QUERY).fts
    total, matching = fts_weightless.row_counts(garden, expression.split(" OR "))
    # Komet's 5 % is in COMMON_SHARE: its rows with the never matching stems cannot fill the
    # answer, so fewer words are common (Garten's) and Komet's rows answer.
    common = [t for t, n in matching.items() if n >= 0.1 * total]
    assert common and all(n < total / 2 for n in matching.values())  # the case: common, not weightless
    assert sum(n >= fts_split.COMMON_SHARE * total for n in matching.values()) > len(common)
    hits, asked = traced(garden, lambda: search_store.fts_chunks(garden, expression, 2))
    expected = whole(garden, expression, 2)
    assert [h.chunk_id for h in hits] == [rowid for rowid, _ in expected]
    assert [h.score for h in hits] == pytest.approx([score for _, score in expected], abs=1e-12)
    rare = " OR ".join(sorted((t for t in matching if t not in common), key=lambda t: (-matching[t], t)))
    assert asked == [f"({rare}) AND ({' OR '.join(common)})", rare]  # the common words' rows alone never ranked


def test_a_split_whose_bound_is_not_beaten_is_followed_by_one_under_the_rows_found(vault, db_path):
    # Quax in 40 of 100 notes (low idf), Bobo in 7 (common by share, a high idf), Zinn in 2 (rare).
    for i in range(100):
        words = " ".join(w for w, every in (("Quax", i % 5 < 2), ("Bobo", i % 14 == 0), ("Zinn", i in (3, 50))) if every)
        vault.write(f"Notiz{i:02d}.md", f"# Notiz {i}\n\nEigenes Wort{i}. {words}\n")
    run_import(db_path, vault.root)
    conn = open_database(db_path)
    expression = parse_query("Quax Bobo Zinn").fts
    total, matching = fts_weightless.row_counts(conn, expression.split(" OR "))
    assert [n >= fts_split.COMMON_SHARE * total for n in (matching['"quax"'], matching['"bobo"'], matching['"zinn"'])] \
        == [True, True, False]
    hits, asked = traced(conn, lambda: search_store.fts_chunks(conn, expression, 2))
    assert [h.chunk_id for h in hits] == [rowid for rowid, _ in whole(conn, expression, 2)]
    # The first split (Zinn's rows) cannot beat Quax's and Bobo's bound; the rows it found beat
    # Quax's alone: the second split ranks Bobo's and Zinn's rows, never the whole query.
    assert asked == ['("zinn") AND ("bobo" OR "quax")', '"zinn"', '("bobo" OR "zinn") AND ("quax")', '"bobo" OR "zinn"']
    conn.close()


def test_the_whole_query_runs_when_the_rare_words_cannot_fill_the_answer(garden):
    expression = parse_query(QUERY).fts
    hits, asked = traced(garden, lambda: search_store.fts_chunks(garden, expression, 6))  # 3 have Komet
    assert asked == [expression]
    assert [h.chunk_id for h in hits] == [rowid for rowid, _ in whole(garden, expression, 6)]


def test_the_whole_query_runs_when_a_row_of_common_words_alone_could_rank(garden, monkeypatch):
    # A bound the rare rows cannot reach: the split's rows are not kept, the whole query answers.
    monkeypatch.setattr(fts_split, "K1", 1e9)
    expression = parse_query(QUERY).fts
    hits, asked = traced(garden, lambda: search_store.fts_chunks(garden, expression, 2))
    assert asked[-1] == expression and len(asked) == 3
    assert [h.chunk_id for h in hits] == [rowid for rowid, _ in whole(garden, expression, 2)]


def test_an_answer_is_kept_until_the_table_changes(vault, db_path, garden):
    expression = parse_query(QUERY).fts
    first = search_store.fts_chunks(garden, expression, 2)
    again, asked = traced(garden, lambda: search_store.fts_chunks(garden, expression, 2))
    assert asked == [] and again == first  # a keystroke that adds a space asks the same again
    vault.write("Neu.md", "# Komet\n\nKomet Komet Komet im Garten.\n")  # the best match now
    run_import(db_path, vault.root)
    fresh, asked = traced(garden, lambda: search_store.fts_chunks(garden, expression, 2))
    assert asked and fresh != first
    assert [h.chunk_id for h in fresh] == [rowid for rowid, _ in whole(garden, expression, 2)]
    assert fresh[0].note_id == garden.execute("SELECT note_id FROM notes WHERE path = 'Neu.md'").fetchone()[0]
