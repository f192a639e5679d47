"""The owner's ranked full-text rows: common words ranked only where rare ones match, the last answers kept.

FTS5's bm25 adds, per phrase, idf x f(k1 + 1) / (f + k1(1 - b + b D / avgdl)): less than
idf x (k1 + 1) in any row, and less than idf x the g of the best row of the phrase's champion
list where the nightly made one (store.fts_champions; rows written since are computed). Ranking a
word costs about 0.4 us per row it matches; at a million chunks a word in 40 % of them ("plugin",
"github") made every query with it take 0.3-0.8 s. A query of rare words R and common ones C:
- a row matching no word of R scores less than U = the sum over C of those bounds;
- the best rows matching R and C are those of `(R) AND (C)`: bm25 over both phrase lists is the
  score the whole query gives them (each phrase's idf is its own, whatever the expression);
- the best rows matching R only are among the `limit` best of `R` alone, scored as by the whole
  query (a row of R and C scores less there, and when `(R) AND (C)` is full, below all its rows:
  such a row never enters the answer with its partial score).
When the `limit`-th best of these scores more than U, no row of C alone can be among the first
`limit`, and these two cheaper queries are the whole query's answer: the same rows, in the same
order (ties by rowid, as SQLite's sorter leaves them), the scores to the last bits of a double
(the phrases are summed in another order).
C is first the listed phrases (or those in COMMON_SHARE of the rows), fewer of them while R's
rows cannot fill the answer. When the bound is not beaten, the `limit`-th score found is still
a floor of the answer's: the most common words whose bounds add up to less than it are C once
more, a split that cannot fail (its R has every row of the first R, and more). When no word
fits under it, the whole query runs.

Answers are kept per connection while the table is unchanged (fts_weightless's table state): a
keystroke that adds a space or a stop word asks the same query again.
"""

from __future__ import annotations

import heapq
from typing import Callable

import apsw

from mindtui.store import fts_champions, fts_rows, fts_weightless

# Without champion lists, a word in this share of the rows is first ranked only where the query's
# rarer words match.
COMMON_SHARE = 0.03
K1 = fts_rows.K1  # FTS5's bm25 constant: a phrase adds less than idf x (K1 + 1) to a row's score
ANSWERS_KEPT = 32

Rows = list[tuple[int, float]]  # (rowid, bm25 score: lower is better), best first
Rank = Callable[[str, int], Rows]  # a MATCH expression's `limit` best rows


def ranked(conn: apsw.Connection, expression: str, limit: int, rank: Rank) -> Rows:
    """rank(expression, limit), by the split above when it pays, kept while chunks_fts is unchanged."""
    kept = fts_weightless.kept_answers(conn)
    key = (expression, limit)
    rows = kept.get(key)
    if rows is None:
        terms = expression.split(" OR ")  # query.parse_query joins quoted single-token strings
        listed = fts_champions.known(conn, terms) if limit > 0 else None  # the nightly's lists
        rows = fts_champions.ranked(conn, expression, limit, rank, listed) if listed else None
        if rows is None and len(terms) > 1:
            rows = _split(conn, terms, limit, rank, listed)
        if rows is None:
            rows = rank(expression, limit)
        kept[key] = rows
        while len(kept) > ANSWERS_KEPT:
            kept.popitem(last=False)
    else:
        kept.move_to_end(key)
    return list(rows)


def _split(conn: apsw.Connection, terms: list[str], limit: int, rank: Rank,
           listed: fts_champions.Known | None) -> Rows | None:
    total, matching = fts_weightless.row_counts(conn, terms)
    bounds = listed.common_bounds(conn) if listed else {}
    extra = listed.written if listed else {}  # rows the lists' bounds do not hold for

    def bound(common: list[str]) -> float:
        return sum(bounds.get(t, fts_rows.idf(total, matching[t]) * (K1 + 1)) for t in common)

    order = sorted(terms, key=lambda t: (-matching[t], t))  # the most common first
    first = len(listed.common) if listed else sum(matching[t] >= COMMON_SHARE * total for t in terms)
    for size in range(min(first, len(terms) - 1), 0, -1):  # fewer common words while R cannot fill
        if sum(matching[t] for t in order[size:]) >= limit:
            break
    else:
        return None
    rows, floor = _split_at(order[:size], order[size:], limit, rank, bound(order[:size]), extra)
    if rows is not None:
        return rows
    size = 0
    while size < len(terms) - 1 and fts_champions.beats(floor, bound(order[:size + 1])):
        size += 1
    if size == 0:
        return None
    return _split_at(order[:size], order[size:], limit, rank, bound(order[:size]), extra)[0]


def _split_at(common: list[str], rare: list[str], limit: int, rank: Rank, bound: float,
              extra: dict[int, float]) -> tuple[Rows | None, float]:
    """The answer when the rows found beat the bound, else None; and the `limit`-th score found
    (goodness, 0 when fewer). `extra`: rows the bound does not hold for, with their scores."""
    rows = _best(fts_champions.rare_rows(sorted(common), rare, limit, rank), extra, limit)
    floor = -rows[-1][1] if len(rows) == limit else 0.0
    return (rows if len(rows) == limit and fts_champions.beats(floor, bound) else None), floor


def _best(rows: Rows, extra: dict[int, float], limit: int) -> Rows:
    """The best `limit` of rows and extra rows; a row in both with its better score (a row's
    score from a query of some of the words is less than the truth)."""
    scores = dict(extra)
    for rowid, score in rows:
        scores[rowid] = min(score, scores.get(rowid, score))
    return heapq.nsmallest(limit, ((rowid, score) for rowid, score in scores.items()),
                           key=lambda row: (row[1], row[0]))
