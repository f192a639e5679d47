"""The owner's ranked full-text query of a large table runs on several threads, each ranking a
rowid range with the whole table's statistics (store.fts_parallel): the answer must be the one
statement's, row for row and score for score, ties included, and stop on the caller's token."""

from __future__ import annotations

import apsw
import pytest

from mindtui.errors import Cancelled
from mindtui.progress import CancelToken
from mindtui.search.query import parse_query
from mindtui.store import fts_parallel, open_database, search_store
from mindtui.store.interrupt import stopping_on

from conftest import run_import

RANKING = "bm25(chunks_fts, 5.0, 3.0, 1.0)"
QUERIES = ("Garten", "Komet Garten", "Eigenes", "Gartenhaus", "Beet Wort7", "Verweis")


def whole(conn, expression, limit):
    return conn.execute(f"SELECT rowid, {RANKING} AS score FROM chunks_fts WHERE chunks_fts MATCH ?"
                        " ORDER BY score LIMIT ?", (expression, limit)).fetchall()


@pytest.fixture
def conn(vault, db_path, monkeypatch):
    # Twelve notes alike (their rows tie), words in most notes and in few, links (anchor rows
    # have negative rowids), and a table split into three ranges however small.
    for i in range(90):
        text = "Der Garten blüht, ein Beet." if i % 9 == 0 else f"Eigenes Wort{i % 13}. Der Garten{' und das Gartenhaus' * (i % 4)}."
        comet = " Ein Komet zieht vorbei." if i % 17 == 3 else ""
        link = f" Verweis auf [[Notiz{(i * 7) % 90:02d}]]." if i % 3 == 0 else ""
        vault.write(f"Notiz{i:02d}.md", f"# Notiz {i}\n\n{text}{comet}{link}\n")
    run_import(db_path, vault.root)
    monkeypatch.setattr(fts_parallel, "PARALLEL_MIN_ROWS", 1)
    monkeypatch.setattr(fts_parallel, "THREADS", 3)
    connection = open_database(db_path)
    yield connection
    connection.close()


def test_the_ranges_cover_the_table_in_parts_of_about_equal_rows(conn):
    ranges = fts_parallel._ranges(conn)
    rowids = [row[0] for row in conn.execute("SELECT rowid FROM chunks_fts ORDER BY rowid")]
    assert len(ranges) == 3 and rowids[0] < 0  # anchor rows first
    counts = [sum(low <= r <= high for r in rowids) for low, high in ranges]
    assert sum(counts) == len(rowids) and max(counts) - min(counts) <= 2
    assert all(ranges[i][1] + 1 == ranges[i + 1][0] for i in range(2))


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("limit", [1, 7, 20, 500])
def test_the_answer_on_three_threads_is_the_one_statements(conn, query, limit):
    expression = parse_query(query).fts
    expected = whole(conn, expression, limit)
    assert expected  # every query matches
    assert fts_parallel.ranked(conn, RANKING, expression, limit) == expected
    scores = [score for _, score in whole(conn, expression, 500)]
    if query == "Garten":
        assert len(scores) != len(set(scores))  # the case: rows that tie, across the ranges


def test_the_owners_full_text_hits_are_those_of_one_thread(conn, monkeypatch):
    found = {}
    for threads in (3, 1):
        monkeypatch.setattr(fts_parallel, "THREADS", threads)
        found[threads] = [search_store.fts_chunks(conn, parse_query(q).fts, 20) for q in QUERIES]
        conn.execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('optimize')")  # a new table state: nothing kept
    assert found[3] == found[1]


def test_the_other_threads_stop_on_the_callers_token(conn):
    token = CancelToken()
    with pytest.raises(Cancelled):
        with stopping_on(conn, token):
            token.cancel()  # the ranges on other threads start after this
            fts_parallel.ranked(conn, RANKING, parse_query("Garten").fts, 20)
    assert fts_parallel.ranked(conn, RANKING, parse_query("Garten").fts, 3) == whole(
        conn, parse_query("Garten").fts, 3)


def test_a_file_replaced_at_the_same_path_is_read_anew_by_the_other_threads(vault, db_path, monkeypatch):
    monkeypatch.setattr(fts_parallel, "PARALLEL_MIN_ROWS", 1)
    monkeypatch.setattr(fts_parallel, "THREADS", 3)
    expression = parse_query("Garten").fts
    for round_ in range(2):  # the second store has other notes: a helper still on the first is stale
        for i in range(40 + 30 * round_):
            vault.write(f"R{round_}/N{i:02d}.md", f"# N{i}\n\nDer Garten {'und der Garten ' * (i % 5)}Nummer {i}.\n")
        if round_:
            for path in (db_path, db_path.with_name(db_path.name + "-wal"), db_path.with_name(db_path.name + "-shm")):
                path.unlink(missing_ok=True)
        run_import(db_path, vault.root)
        conn = open_database(db_path)
        try:
            for limit in (5, 50):
                assert fts_parallel.ranked(conn, RANKING, expression, limit) == whole(conn, expression, limit)
        finally:
            conn.close()


def test_a_helper_that_cannot_read_leaves_the_answer_to_one_statement(conn, monkeypatch):
    def fails(path):
        raise apsw.CantOpenError("no file")

    monkeypatch.setattr(fts_parallel, "_connection", fails)
    expression = parse_query("Garten").fts
    assert fts_parallel.ranked(conn, RANKING, expression, 20) == whole(conn, expression, 20)
