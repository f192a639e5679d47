"""The owner's ranked full-text rows: common words ranked only where rare ones match, the last answers kept.

FTS5's bm25 adds, per phrase, idf x f(k1 + 1) / (f + k1(1 - b + b D / avgdl)): less than
idf x (k1 + 1) in any row. Ranking a word costs about 0.4 us per row it matches; at a million
chunks a word in 40 % of them ("plugin", "github") made every query with it take 0.3-0.8 s.
A query of rare words R and common ones C (each in a COMMON_SHARES share of the rows or more):
- a row matching no word of R scores less than U = the sum over C of idf x (k1 + 1);
- the best rows matching R and C are those of `(R) AND (C)`: bm25 over both phrase lists is the
  score the whole query gives them (each phrase's idf is its own, whatever the expression);
- the best rows matching R only are among the `limit` best of `R` alone, scored as by the whole
  query (a row of R and C scores less there, and when `(R) AND (C)` is full, below all its rows:
  such a row never enters the answer with its partial score).
When the `limit`-th best of these scores U or more, no row of C alone can be among the first
`limit`, and these two cheaper queries are the whole query's answer: the same rows, in the same
order (ties by rowid, as SQLite's sorter leaves them), the scores to the last bits of a double
(the phrases are summed in another order). Otherwise fewer words count as common (a lower bound,
more rows ranked), and at last the whole query runs.

Answers are kept per connection while the table is unchanged (fts_weightless's table state): a
keystroke that adds a space or a stop word asks the same query again.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable

import apsw

from mindtui.store import fts_weightless

# A word in this share of the rows is ranked only where the query's rarer words match: tried in
# this order until the bound holds (at 1M chunks, CPU p95 of the bench's keystroke queries: 0.1
# alone 193 ms, 0.03 alone 241, the whole query 320).
COMMON_SHARES = (0.03, 0.1)
K1 = 1.2  # FTS5's bm25 constant: a phrase adds less than idf x (K1 + 1) to a row's score
ANSWERS_KEPT = 32

Rows = list[tuple[int, float]]  # (rowid, bm25 score: lower is better), best first
Rank = Callable[[str, int], Rows]  # a MATCH expression's `limit` best rows


def ranked(conn: apsw.Connection, expression: str, limit: int, rank: Rank) -> Rows:
    """rank(expression, limit), by the split above when it pays, kept while chunks_fts is unchanged."""
    kept = fts_weightless.kept_answers(conn)
    key = (expression, limit)
    rows = kept.get(key)
    if rows is None:
        rows = _split(conn, expression, limit, rank)
        if rows is None:
            rows = rank(expression, limit)
        kept[key] = rows
        while len(kept) > ANSWERS_KEPT:
            kept.popitem(last=False)
    else:
        kept.move_to_end(key)
    return list(rows)


def _split(conn: apsw.Connection, expression: str, limit: int, rank: Rank) -> Rows | None:
    terms = expression.split(" OR ")  # query.parse_query joins quoted single-token strings
    if len(terms) < 2:
        return None
    total, matching = fts_weightless.row_counts(conn, terms)
    tried: set[frozenset[str]] = set()
    for share in COMMON_SHARES:  # the most words left out first: fewer rows ranked, a higher bound
        common = frozenset(t for t in terms if matching[t] >= share * total)
        rare = [t for t in terms if t not in common]
        if common in tried or not common or not rare or sum(matching[t] for t in rare) < limit:
            continue  # asked already, nothing to leave out, or too few rows without the common words
        tried.add(common)
        rows = _split_at(sorted(common), rare, limit, rank,
                         sum(fts_weightless.idf(total, matching[t]) * (K1 + 1) for t in common))
        if rows is not None:
            return rows
    return None


def _split_at(common: list[str], rare: list[str], limit: int, rank: Rank, bound: float) -> Rows | None:
    rare_words = " OR ".join(rare)
    both = rank(f"({rare_words}) AND ({' OR '.join(common)})", limit)
    # The rare words' own best rows: exact for those without common words, less than the truth for
    # the others -- which, when `both` is full, all score below its rows (else they are in it).
    seen = {rowid for rowid, _ in both}
    rows = both + [row for row in rank(rare_words, limit) if row[0] not in seen]
    rows = sorted(rows, key=lambda row: (row[1], row[0]))[:limit]
    # Scores are negative; a margin keeps a row of the common words alone from a tie by rounding.
    if len(rows) < limit or -rows[-1][1] < bound * (1 + 1e-9) + 1e-9:
        return None
    return rows
