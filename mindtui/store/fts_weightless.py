"""The words of a full-text query that BM25 gives no weight, so the ranked query can leave them out.

FTS5's bm25 weighs a phrase by idf = log((N - n + 0.5) / (n + 0.5)) over N rows, n of them
matching, and by 1e-6 where that is not positive: a word in at least half of the rows moves a
row's score by at most 2.2e-6 (idf times k1 + 1). Ranking it still costs one evaluation per
matching row, about a microsecond: at a million chunks a word in nearly every chunk (a template
line, the vault's own name) made every query with it take a second. Leaving such words out of
the ranked query keeps the order of every row that matches another word, to 2.2e-6 of score;
the caller falls back to the whole query when the others match fewer rows than it needs.

n is counted once per word and table state (a word in every chunk: ~80 ms once), and forgotten
when the table changes (its structure record, as apsw.fts5 checks it); so are the ranked
answers store.fts_split keeps.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

import apsw

from mindtui.store.fts_rows import IDF_FLOOR, idf

_ROW_COUNT = "mindtui_fts_rows"  # an auxiliary function: FTS5's own row and token counts (no scan)


@dataclass
class _TableStats:
    cookie: bytes | None = None
    rows: int = 0
    tokens: int = 0  # in all rows and columns (bm25's mean row length is tokens / rows)
    matching: dict[str, int] = field(default_factory=dict)  # term -> rows it matches
    answers: OrderedDict = field(default_factory=OrderedDict)  # ranked answers (fts_split), oldest first
    shares: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  # parts -> rowid ranges (fts_parallel)
    reader: object = None  # rows' tokens read again (fts_rows.RowReader, made by fts_champions)


_STATS: "weakref.WeakKeyDictionary[apsw.Connection, _TableStats]" = weakref.WeakKeyDictionary()


def weightless_terms(conn: apsw.Connection, terms: list[str]) -> set[str]:
    """Those of `terms` (quoted FTS5 strings of an OR query of chunks_fts) whose bm25 weight is
    the 1e-6 floor."""
    rows, matching = row_counts(conn, terms)
    return {term for term in terms if matching[term] and idf(rows, matching[term]) == IDF_FLOOR}


def without_weightless(conn: apsw.Connection, expression: str) -> str | None:
    """An OR query of chunks_fts with its weightless terms left out; None when it has none to
    leave out, or nothing else (what the owner's full-text query ranks first: search_store)."""
    terms = expression.split(" OR ")  # query.parse_query joins quoted single-token strings
    heavy = weightless_terms(conn, terms) if len(terms) > 1 else set()
    if not heavy or len(heavy) == len(terms):
        return None
    return " OR ".join(t for t in terms if t not in heavy)


def row_counts(conn: apsw.Connection, terms: list[str]) -> tuple[int, dict[str, int]]:
    """chunks_fts's rows, and how many of them each of `terms` matches (counted once per table state)."""
    stats = _stats(conn)
    for term in terms:
        if term not in stats.matching:
            stats.matching[term] = conn.execute(
                "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (term,)).fetchone()[0]
    return stats.rows, {term: stats.matching[term] for term in terms}


def _stats(conn: apsw.Connection) -> _TableStats:
    stats = _STATS.get(conn)
    if stats is None:
        conn.register_fts5_function(_ROW_COUNT, lambda api: f"{api.row_count} {api.column_total_size(-1)}")
        stats = _STATS[conn] = _TableStats()
    row = conn.execute("SELECT block FROM chunks_fts_data WHERE id = 10").fetchone()
    cookie = row[0] if row else None
    if stats.cookie != cookie or cookie is None:
        first = conn.execute(f"SELECT {_ROW_COUNT}(chunks_fts) FROM chunks_fts LIMIT 1").fetchone()
        rows, tokens = map(int, first[0].split()) if first else (0, 0)
        stats.cookie, stats.rows, stats.tokens, stats.matching = cookie, rows, tokens, {}
        stats.answers, stats.shares, stats.reader = OrderedDict(), {}, None
    return stats


def table_state(conn: apsw.Connection) -> _TableStats:
    """chunks_fts's row and token counts and what is kept of it while it is unchanged (see above)."""
    return _stats(conn)


def kept_answers(conn: apsw.Connection) -> OrderedDict:
    """The connection's ranked answers of chunks_fts in its current state (emptied when it changes)."""
    return _stats(conn).answers
