"""A full-text row's words read again from what it was made of, and its BM25 score computed as FTS5 does.

chunks_fts is contentless: its rows' words are not stored. A chunk's row is made by the importer
(vault.note_builder) from the note's title and aliases, the chunk's heading path and its text,
each analyzed (text.analysis) in the note's language; an anchor row's text (store.anchors) is
kept as written. All of these are stored, so the row's tokens are those FTS5's own
tokenizer gives for the same analyzed text, and BM25's score of a row is computed here to the
same bits as FTS5's bm25() (fts5_aux.c: phrases summed in the expression's order): for the few
hundred rows a champion-list query ranks (store.fts_champions) without reading half a million.

Only single-token phrases are read here (a quoted stem, or one with `*`); a phrase of several
tokens gives None, and the caller ranks through FTS5.
"""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from dataclasses import dataclass

import apsw

from mindtui.text import analysis
from mindtui.text.names import is_id_like

# The chunks_fts tokenizer as migrations/0001 declares it (tests/test_fts_champions.py checks).
TOKENIZER = ("unicode61", ["remove_diacritics", "2"])
# BM25 column weights: title (with aliases) and headings count more than body text (every ranked
# full-text query passes them to bm25(); store.search_store.FTS_WEIGHTS).
COLUMN_WEIGHTS = (5.0, 3.0, 1.0)
BM25 = f"bm25(chunks_fts, {', '.join(map(str, COLUMN_WEIGHTS))})"
K1, B = 1.2, 0.75  # FTS5's bm25 constants
IDF_FLOOR = 1e-6  # what FTS5's bm25 weighs a phrase by when its idf is not positive
ROWS_KEPT = 20_000  # rows whose tokens a connection keeps while the table is unchanged


class RowUnreadable(Exception):
    """A row whose words cannot be read again (an anchor row older than its kept text): the
    caller ranks through FTS5."""


@dataclass(frozen=True)
class Phrase:
    token: str  # as FTS5 folds it
    prefix: bool


@dataclass(frozen=True)
class RowTokens:
    size: int  # tokens in all columns (bm25's D)
    counts: tuple[dict[str, int], ...]  # per column: token -> occurrences


def phrase_of(conn: apsw.Connection, term: str) -> Phrase | None:
    """A query term ('"stem"' or '"stem"*', store.search_store's expressions) as one token; None
    for anything else (a column filter, several tokens)."""
    prefix = term.endswith("*")
    quoted = term[:-1] if prefix else term
    if len(quoted) < 2 or quoted[0] != '"' or quoted[-1] != '"' or '"' in quoted[1:-1]:
        return None
    tokens = _tokenize(tokenizer_of(conn), quoted[1:-1])
    return Phrase(tokens[0], prefix) if len(tokens) == 1 else None


def frequency(row: RowTokens, phrase: Phrase) -> float:
    """bm25's frequency of a phrase in a row: each occurrence weighted by its column's weight."""
    total = 0.0
    for weight, counts in zip(COLUMN_WEIGHTS, row.counts):
        if phrase.prefix:
            hits = sum(n for token, n in counts.items() if token.startswith(phrase.token))
        else:
            hits = counts.get(phrase.token, 0)
        total += weight * hits
    return total


def bm25(row: RowTokens, phrases: list[Phrase], idfs: list[float], avgdl: float) -> float:
    """FTS5's bm25(chunks_fts, 5, 3, 1) of the row for a query of these phrases, in its order."""
    score = 0.0
    size = float(row.size)
    for phrase, idf in zip(phrases, idfs):
        f = frequency(row, phrase)
        score += idf * ((f * (K1 + 1.0)) / (f + K1 * (1 - B + B * size / avgdl)))
    return -1.0 * score


def idf(rows: int, matching: int) -> float:
    """bm25's weight of a phrase that `matching` of `rows` rows match, as FTS5 computes it."""
    value = math.log((rows - matching + 0.5) / (matching + 0.5))
    return value if value > 0.0 else IDF_FLOOR


class RowReader:
    """Rows' tokens of one connection's chunks_fts in one table state (a new reader when it changes)."""

    def __init__(self, conn: apsw.Connection) -> None:
        self.conn = conn
        self.tokenizer = tokenizer_of(conn)
        self.kept: OrderedDict[int, RowTokens | None] = OrderedDict()

    def rows(self, rowids: list[int]) -> dict[int, RowTokens]:
        """The tokens of these rows; a row that no longer exists is left out (RowUnreadable: one
        cannot be read again)."""
        wanted = [r for r in dict.fromkeys(rowids) if r not in self.kept]
        if wanted:
            found = _chunk_rows(self.conn, self.tokenizer, [r for r in wanted if r > 0])
            found.update(_anchor_rows(self.conn, self.tokenizer, [-r for r in wanted if r < 0]))
            for rowid in wanted:
                self.kept[rowid] = found.get(rowid)
            while len(self.kept) > ROWS_KEPT:
                self.kept.popitem(last=False)
        out = {}
        for rowid in rowids:
            tokens = self.kept.get(rowid)
            if tokens is not None:
                out[rowid] = tokens
        return out


def tokenizer_of(conn: apsw.Connection) -> apsw.FTS5Tokenizer:
    """chunks_fts's tokenizer, as a callable of the connection."""
    return conn.fts5_tokenizer(*TOKENIZER)


def _tokenize(tokenizer: apsw.FTS5Tokenizer, text: str) -> list[str]:
    return tokenizer(text.encode("utf-8"), apsw.FTS5_TOKENIZE_DOCUMENT, None,
                     include_offsets=False, include_colocated=False)


def _row(tokenizer: apsw.FTS5Tokenizer, columns: tuple[str, str, str]) -> RowTokens:
    counts = []
    size = 0
    for text in columns:
        column: dict[str, int] = {}
        tokens = _tokenize(tokenizer, text) if text else []
        for token in tokens:
            column[token] = column.get(token, 0) + 1
        size += len(tokens)
        counts.append(column)
    return RowTokens(size, tuple(counts))


def _chunk_rows(conn: apsw.Connection, tokenizer: apsw.FTS5Tokenizer, chunk_ids: list[int]) -> dict[int, RowTokens]:
    """As vault.note_builder writes a chunk's row."""
    if not chunk_ids:
        return {}
    found = {}
    titles: dict[str, str] = {}
    rows = conn.execute(
        "SELECT c.chunk_id, c.note_id, c.heading_path, c.text, n.title, n.aliases, n.lang FROM main.chunks c"
        " JOIN main.notes n ON n.note_id = c.note_id WHERE c.chunk_id IN (SELECT value FROM json_each(?))",
        (json.dumps(chunk_ids),))
    for chunk_id, note_id, heading_path, text, title, aliases, lang in rows:
        if note_id not in titles:
            names = ([] if is_id_like(title) else [title]) + json.loads(aliases)
            titles[note_id] = analysis.analyze(" ".join(names), lang)
        found[chunk_id] = _row(tokenizer, (titles[note_id], analysis.analyze(heading_path, lang),
                                      analysis.analyze(text, lang)))
    return found


def _anchor_rows(conn: apsw.Connection, tokenizer: apsw.FTS5Tokenizer, anchor_ids: list[int]) -> dict[int, RowTokens]:
    """As store.anchors wrote a note's anchor row (its text kept beside it)."""
    if not anchor_ids:
        return {}
    found = {}
    for anchor_id, indexed in conn.execute(
            "SELECT anchor_id, indexed FROM main.note_anchors WHERE anchor_id IN (SELECT value FROM json_each(?))",
            (json.dumps(anchor_ids),)):
        if indexed is None:
            raise RowUnreadable(f"anchor row {anchor_id} was written before its text was kept")
        found[-anchor_id] = _row(tokenizer, ("", "", indexed))
    return found
