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
    # Komet's 5 % is common at the first share tried: too few rows are left, the next share answers.
    common = [t for t, n in matching.items() if n >= max(fts_split.COMMON_SHARES) * total]
    assert common and all(n < total / 2 for n in matching.values())  # the case: common, not weightless
    hits, asked = traced(garden, lambda: search_store.fts_chunks(garden, expression, 2))
    expected = whole(garden, expression, 2)
    assert [h.chunk_id for h in hits] == [rowid for rowid, _ in expected]
    assert [h.score for h in hits] == pytest.approx([score for _, score in expected], abs=1e-12)
    rare = " OR ".join(t for t in expression.split(" OR ") if t not in common)
    assert asked == [f"({rare}) AND ({' OR '.join(common)})", rare]  # the common words' rows alone never ranked


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
