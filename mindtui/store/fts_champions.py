"""Champion lists: the best rows of every phrase in a large share of the full-text index, made by
the nightly, so that a query with such a phrase ranks a few rows of it, not half a million.

At a million chunks a word like "plugin" is in 40 % of the rows and FTS5 evaluates bm25 for each
(about 0.4 us a row, store.fts_split): 0.3-0.7 s for a keystroke. BM25 is a sum over the query's
phrases of idf x g(row), g = f(k1 + 1) / (f + k1(1 - b + b D / avgdl)). For each phrase in
COMMON_SHARE of the rows or more, the nightly keeps its LIST_LENGTH rows of highest g, best
first, with g. A query with one such phrase (`ranked`):
- takes the rows of its other, rarer phrases from FTS5 as store.fts_split does (`rare_rows`);
- reads the list best first, each row scored exactly (store.fts_rows: the row's words read
  again, bm25 to the same bits as FTS5's), until the `limit`-th score beats idf x the g where
  the list stopped: no row of the phrase alone further down can be among the first `limit`;
- the answer is then the whole query's: the same rows in the same order as FTS5's ranking of
  every row (ties by rowid). It gives up (None: FTS5 ranks) when the list runs out first.
A query with several listed phrases is split by store.fts_split, each phrase bounded by its
list's best g (`Known.common_bounds`): their best rows all have about the same g, so reading the
lists seldom proves an answer.

The lists stay right while the vault changes: rows written to the index since (logged by a
trigger, fts_champion_written) are computed on every query; a deleted row is met and dropped;
the mean row length's change is bounded (g grows by at most its ratio); the phrases' idf is
theirs when the lists were made as long as the index is unchanged, else counted (once per table
state). Past WRITTEN_MAX logged rows (a re-import of everything) FTS5 ranks until the next
nightly. Only the owner's unfiltered queries use the lists (an agent's ranking is over the rows
it sees: store.visible_rank).
"""

from __future__ import annotations

import heapq
import json
import time
import weakref
from dataclasses import dataclass, field
from typing import Callable

import apsw

from mindtui.store import fts_parallel, fts_rows, fts_weightless
from mindtui.store.meta import get_meta, set_meta
from mindtui.text import analysis

COMMON_SHARE = 0.02  # a phrase in this share of the rows or more gets a list
LIST_LENGTH = 1000  # rows a list keeps
MIN_ROWS = 100_000  # a smaller index gets no lists: FTS5 ranks it fast enough
WRITTEN_MAX = 1_000  # rows written since the lists that a query computes itself (~50 us each)
PAGE = 32  # list entries read at a time
# Rows of its list a query reads again past `limit` (~50 us each): a phrase whose best rows all
# have about the same g (every chunk of a note named "... Plugin" has the word in its title)
# would read most of its list before the bound fell; it gives up, and FTS5 ranks it.
READ_MAX = 96
MARGIN = 1e-9  # relative: a row not met never ties the last row kept by rounding
FTS_CHAMPIONS_KEY = "fts_champions"  # meta: the index's state when the lists were made

Rows = list[tuple[int, float]]
Rank = Callable[[str, int], Rows]  # a MATCH expression's `limit` best rows, as FTS5 ranks them
K1_PLUS_1 = fts_rows.K1 + 1.0  # the most g can be


# -- made by the nightly --------------------------------------------------------------------------

def build(conn: apsw.Connection, min_rows: int = MIN_ROWS, share: float = COMMON_SHARE,
          length: int = LIST_LENGTH, progress: Callable[[int, int], None] | None = None) -> dict:
    """Make the lists anew (a smaller index than `min_rows` gets none: its old lists go)."""
    started = time.monotonic()
    state = fts_weightless.table_state(conn)
    cookie, rows, tokens = state.cookie, state.rows, state.tokens
    lists: dict[str, tuple[int, Rows]] = {}
    if rows >= max(min_rows, 1):
        phrases = _common_phrases(conn, rows, share)
        _, matching = fts_weightless.row_counts(conn, phrases)
        for done, phrase in enumerate(phrases):
            if matching[phrase] >= share * rows:
                weight = fts_rows.idf(rows, matching[phrase])
                best = fts_parallel.ranked(conn, fts_rows.BM25, phrase, length)
                lists[phrase] = (matching[phrase], [(rowid, -score / weight) for rowid, score in best])
            if progress:
                progress(done + 1, len(phrases))
    with conn:
        if fts_weightless.table_state(conn).cookie != cookie:
            # Written to meanwhile: the old lists and their log stay (still right), the next night tries again.
            return {"champion_phrases": None, "champion_note": "the full-text index changed while the lists were made"}
        conn.execute("DELETE FROM fts_champion_rows")
        conn.execute("DELETE FROM fts_champion_phrases")
        conn.execute("DELETE FROM fts_champion_written")
        for phrase, (matching_rows, best) in lists.items():
            conn.execute("INSERT INTO fts_champion_phrases (phrase, rows_matching, listed) VALUES (?, ?, ?)",
                         (phrase, matching_rows, len(best)))
            conn.executemany("INSERT INTO fts_champion_rows (phrase, rank, row, weight) VALUES (?, ?, ?, ?)",
                             [(phrase, rank, rowid, weight) for rank, (rowid, weight) in enumerate(best)])
        set_meta(conn, FTS_CHAMPIONS_KEY, json.dumps(
            {"rows": rows, "tokens": tokens, "cookie": cookie.hex() if cookie else None}))
    return {"champion_phrases": len(lists), "champion_rows": sum(len(b) for _, b in lists.values()),
            "champion_s": round(time.monotonic() - started, 1)}


def _common_phrases(conn: apsw.Connection, rows: int, share: float) -> list[str]:
    """The phrases a query may ask for that could be in `share` of the rows: stems, and the
    prefixes (text.analysis.MIN_PREFIX letters or more) of stems whose rows add up to it."""
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.mindtui_fts_vocab USING fts5vocab(main, chunks_fts, row)")
    try:
        vocabulary = conn.execute("SELECT term, doc FROM temp.mindtui_fts_vocab").fetchall()
    finally:
        conn.execute("DROP TABLE temp.mindtui_fts_vocab")
    wanted = share * rows
    prefixes: dict[str, int] = {}
    for term, docs in vocabulary:
        for end in range(analysis.MIN_PREFIX, len(term) + 1):
            prefixes[term[:end]] = prefixes.get(term[:end], 0) + docs
    return sorted([f'"{term}"' for term, docs in vocabulary if docs >= wanted and '"' not in term]
                  + [f'"{prefix}"*' for prefix, docs in prefixes.items() if docs >= wanted and '"' not in prefix])


def status(conn: apsw.Connection) -> dict:
    """What `mindtui status` says of the lists: how many phrases, how many rows written since
    (queries score those themselves, up to WRITTEN_MAX; past it FTS5 ranks until the next nightly)."""
    phrases = conn.execute("SELECT count(*) FROM fts_champion_phrases").fetchone()[0]
    written = conn.execute("SELECT count(*) FROM (SELECT 1 FROM fts_champion_written LIMIT ?)",
                           (WRITTEN_MAX + 1,)).fetchone()[0]
    return {"phrases": phrases, "rows_written_since": written, "in_use": bool(phrases) and written <= WRITTEN_MAX}


# -- read by a query -------------------------------------------------------------------------------

@dataclass
class _Lists:
    meta: str | None
    avgdl: float = 0.0
    cookie: bytes | None = None
    phrases: dict[str, tuple[int, int]] = field(default_factory=dict)  # phrase -> (rows matching, listed)
    seeded: object = None  # the table state's counts these were given to (seed_counts)


# A connection's lists, read again when they are made anew (the meta record changes).
_LISTS: "weakref.WeakKeyDictionary[apsw.Connection, _Lists]" = weakref.WeakKeyDictionary()


def _lists(conn: apsw.Connection) -> _Lists | None:
    meta = get_meta(conn, FTS_CHAMPIONS_KEY)
    if meta is None:
        return None
    found = _LISTS.get(conn)
    if found is None or found.meta != meta:
        made = json.loads(meta)
        phrases = {phrase: (matching, listed) for phrase, matching, listed in conn.execute(
            "SELECT phrase, rows_matching, listed FROM fts_champion_phrases")}
        found = _LISTS[conn] = _Lists(meta, made["tokens"] / max(made["rows"], 1),
                                          bytes.fromhex(made["cookie"]) if made["cookie"] else None, phrases)
    return found if found.phrases else None


def seed_counts(conn: apsw.Connection) -> None:
    """While the index is as the lists were made, their phrases' row counts are the table
    state's (store.fts_weightless counts them otherwise: ~0.1 s for a common prefix)."""
    lists = _lists(conn)
    if lists is None:
        return
    state = fts_weightless.table_state(conn)
    if state.cookie == lists.cookie and lists.seeded is not state.matching:
        for phrase, (matching, _) in lists.phrases.items():
            state.matching.setdefault(phrase, matching)
        lists.seeded = state.matching


class _List:
    """One phrase's list read a page at a time."""

    def __init__(self, conn: apsw.Connection, phrase: str, listed: int, complete: bool) -> None:
        self.conn, self.phrase, self.listed, self.complete = conn, phrase, listed, complete
        self.depth = 0
        self.weight = K1_PLUS_1  # g where the list was left (nothing read: the most there is)

    @property
    def exhausted(self) -> bool:
        return self.depth >= self.listed

    def bound(self) -> float:
        """The g a row of the phrase not met in the list yet had when the lists were made."""
        if self.exhausted:
            return 0.0 if self.complete else self.weight
        return self.weight

    def next_page(self) -> list[int]:
        page = self.conn.execute(
            "SELECT row, weight FROM fts_champion_rows WHERE phrase = ? AND rank >= ? ORDER BY rank LIMIT ?",
            (self.phrase, self.depth, PAGE)).fetchall()
        self.depth = self.depth + len(page) if page else self.listed
        if page:
            self.weight = page[-1][1]
        return [row for row, _ in page]


def beats(score: float, bound: float) -> bool:
    """A kept row's score (goodness: -bm25) beats a bound on others', past rounding (no row
    bounded by it ties the kept one)."""
    return score > bound * (1 + MARGIN) + MARGIN


def rare_rows(common: list[str], rare: list[str], limit: int, rank: Rank) -> Rows:
    """The rows with a rare word that can be among the best `limit` of an OR query: the best of
    those with a common word too, and the rare words' own best -- exact for those without common
    words, less than the truth for the others, which, when `both` is full, all score below its
    rows (else they are in it)."""
    rare_words = " OR ".join(rare)
    both = rank(f"({rare_words}) AND ({' OR '.join(common)})", limit)
    seen = {rowid for rowid, _ in both}
    return both + [row for row in rank(rare_words, limit) if row[0] not in seen]


@dataclass
class Known:
    """What the lists tell of a query's phrases (see `known`)."""
    terms: list[str]
    common: list[str]  # its listed phrases
    phrases: list[fts_rows.Phrase]
    idfs: list[float]
    avgdl: float
    drift: float  # g now is at most g when the lists were made times this
    lists: _Lists
    reader: fts_rows.RowReader
    written: dict[int, float]  # rows written since the lists that match a phrase: their scores

    def score(self, tokens: fts_rows.RowTokens) -> float | None:
        """A row's bm25 for the whole query; None when it matches none of the phrases."""
        if any(fts_rows.frequency(tokens, phrase) for phrase in self.phrases):
            return fts_rows.bm25(tokens, self.phrases, self.idfs, self.avgdl)
        return None

    def scores(self, rowids: list[int]) -> dict[int, float]:
        """Rows' scores computed from their words, for those that exist and match a phrase
        (fts_rows.RowUnreadable: a row cannot be read again)."""
        scores = {}
        for rowid, tokens in self.reader.rows(rowids).items():
            score = self.score(tokens)
            if score is not None:
                scores[rowid] = score
        return scores

    def common_bounds(self, conn: apsw.Connection) -> dict[str, float]:
        """Per listed phrase, the most it adds to the score of a row not written since (its
        list's best g, which no row of it beats)."""
        idf_of = dict(zip(self.terms, self.idfs))
        bounds = {}
        for phrase in self.common:
            row = conn.execute("SELECT weight FROM fts_champion_rows WHERE phrase = ? AND rank = 0",
                               (phrase,)).fetchone()
            bounds[phrase] = idf_of[phrase] * (row[0] if row else K1_PLUS_1) * self.drift
        return bounds


def known(conn: apsw.Connection, terms: list[str]) -> Known | None:
    """The lists' knowledge of an OR query's phrases; None when they have none to give (no lists,
    no listed phrase, another kind of expression, more than WRITTEN_MAX rows written since)."""
    lists = _lists(conn)
    if lists is None or not any(t in lists.phrases for t in terms):
        return None
    phrases = [fts_rows.phrase_of(conn, term) for term in terms]
    if None in phrases:
        return None
    written = [row for (row,) in conn.execute("SELECT row FROM fts_champion_written LIMIT ?", (WRITTEN_MAX + 1,))]
    state = fts_weightless.table_state(conn)
    if len(written) > WRITTEN_MAX or not state.rows:
        return None
    common = [t for t in terms if t in lists.phrases]
    unchanged = state.cookie == lists.cookie
    _, matching = fts_weightless.row_counts(conn, [t for t in terms if t not in common] if unchanged else terms)
    if unchanged:
        matching.update((t, lists.phrases[t][0]) for t in common)
    if state.reader is None:
        state.reader = fts_rows.RowReader(conn)
    avgdl = state.tokens / state.rows
    found = Known(terms, common, phrases, [fts_rows.idf(state.rows, matching[t]) for t in terms], avgdl,
                  max(1.0, avgdl / lists.avgdl) if lists.avgdl else float("inf"), lists, state.reader, {})
    try:
        found.written = found.scores(written)
    except fts_rows.RowUnreadable:
        return None
    return found


def ranked(conn: apsw.Connection, expression: str, limit: int, rank: Rank,
           found: Known | None = None) -> Rows | None:
    """The `limit` best rows of chunks_fts for an OR query of single phrases with one listed
    phrase, as (rowid, bm25), best first, by its list and `rank` (FTS5's ranking of an
    expression's best rows); None when they cannot answer it (see `known`; several listed
    phrases: store.fts_split; its list ran out before the answer was proved). `found`: the
    lists' knowledge of the query, when the caller has it."""
    terms = expression.split(" OR ")
    if found is None and limit > 0:
        found = known(conn, terms)
    if found is None or limit < 1 or len(found.common) != 1:
        return None
    (phrase,) = found.common
    rare = [t for t in terms if t != phrase]
    scores = dict(found.written)  # not in the list: their words may beat its rows
    if rare:
        for rowid, score in rare_rows([phrase], rare, limit, rank):
            scores.setdefault(rowid, score)
    # Left: rows of the listed phrase alone, met in its list best first.
    listed, matching = found.lists.phrases[phrase][1], found.lists.phrases[phrase][0]
    cursor = _List(conn, phrase, listed, listed >= matching)
    weight = found.idfs[terms.index(phrase)] * found.drift
    reads = 0
    while True:
        best = heapq.nsmallest(limit, scores.items(), key=lambda item: (item[1], item[0]))
        bound = weight * cursor.bound()
        if bound == 0.0 or (len(best) == limit and beats(-best[-1][1], bound)):
            return best  # every row of the phrase met (bound 0), or none not met can be among them
        if cursor.exhausted or reads >= limit + READ_MAX:
            return None  # its list ran out before the answer was proved: FTS5 ranks
        page = [rowid for rowid in cursor.next_page() if rowid not in scores]
        reads += len(page)
        try:
            scores.update(found.scores(page))
        except fts_rows.RowUnreadable:
            return None
