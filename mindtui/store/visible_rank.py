"""An agent's full-text ranking: FTS5's BM25 over the rows the agent sees.

chunks_fts indexes every chunk (and anchor-text row) of the vault. Filtering its hits afterwards
hides a hidden note's rows but not their effect: BM25 weighs each query word by how many rows
hold it among all rows and each row's length against the average length, so a hidden note
holding a query word would lower that word's weight and reorder the visible notes. An agent's
connection ranks with `VISIBLE_BM25` instead, FTS5's own formula (fts5_aux.c, k1 = 1.2,
b = 0.75) with the row count, the average length and each phrase's document frequency taken
over the visible rows only. The hidden rows are usually few: the statistics are the table's
minus theirs (their lengths read from the index's docsize table), cached until the database
changes. knowledge_fts (items: private ones, those of hidden notes) is ranked the same way.
Cost: one Python call per matching row for an agent that has hidden rows; the owner's ranking,
and an agent's with nothing hidden, is FTS5's own.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

import apsw

from mindtui.store.meta import data_version
from mindtui.store.visibility import open_to_agents, seen_by_reader

VISIBLE_BM25 = "mindtui_visible_bm25"
_K1, _B = 1.2, 0.75
HIDDEN_SCORE = math.inf  # a hidden row scores last (bm25 is lower-is-better); callers drop it


def _unseen_anchor_rows() -> str:
    """SQL: the rowids (negative) of the anchor-text rows the reader does not see: a hidden
    note's, and each one a note lent words to that the reader does not see although its stored
    flags let agents read it (a folder added to the reader's privacy.private_paths hides its
    notes before the next import rebuilds the rows, which read the stored flags). A lender's
    line may be in the row of its link's target, of any of an ambiguous link's candidates and of
    the notes of its later rules (store.anchors): all of those rows are left out."""
    lenders = (f"SELECT s.note_id FROM main.notes s WHERE {open_to_agents('s')}"
               f" AND NOT {seen_by_reader('s.note_id')}")
    named = ("SELECT l.resolved_note_id FROM lenders s JOIN main.note_links l ON l.note_id = s.note_id"
             " WHERE l.resolution = 'resolved'"
             " UNION SELECT j.value FROM lenders s JOIN main.note_links l ON l.note_id = s.note_id,"
             " json_each(l.candidates) j WHERE l.resolution = 'ambiguous'"
             " UNION SELECT j.value FROM lenders s JOIN main.note_links l ON l.note_id = s.note_id,"
             " json_each(l.fallback) t, json_each(t.value) j WHERE l.fallback != '[]'")
    return (f"WITH lenders AS MATERIALIZED ({lenders}), named AS MATERIALIZED ({named})"
            f" SELECT -a.anchor_id FROM main.note_anchors a WHERE NOT {seen_by_reader('a.note_id')}"
            " OR a.note_id IN (SELECT * FROM named)")


def hidden_rowids(conn: apsw.Connection, table: str = "chunks_fts") -> frozenset[int]:
    """The rows of `table` an agent connection does not see, as its last ranking_function()
    found them (none for an owner's connection)."""
    states = _HIDDEN.get(conn)
    return states[table].rowids if states is not None else frozenset()


@dataclass
class _HiddenRows:
    version: tuple = ()
    rowids: frozenset[int] = frozenset()
    tokens: int = 0  # their tokens, all columns


# Per agent connection: each full-text table's hidden rows (the function ranking it knows its table).
_HIDDEN: weakref.WeakKeyDictionary[apsw.Connection, dict[str, _HiddenRows]] = weakref.WeakKeyDictionary()


def _varints(blob: bytes):
    """The numbers of a docsize record: SQLite varints (big-endian groups of 7 bits, the high bit
    set on all but the last byte; a ninth byte gives all 8 bits). Read little-endian, a column of
    128 tokens or more came out wrong, and so did the visible rows' average length."""
    value = length = 0
    for byte in blob:
        length += 1
        if length == 9:
            yield (value << 8) | byte
            value = length = 0
        elif byte & 0x80:
            value = (value << 7) | (byte & 0x7F)
        else:
            yield (value << 7) | byte
            value = length = 0


def _hidden_chunk_rows(conn: apsw.Connection) -> set[int]:
    """chunks_fts rowids the reader does not see: hidden notes' chunks (found from the notes:
    there are far fewer of them than chunks) and anchor-text rows."""
    hidden_notes = [row[0] for row in conn.execute(
        f"SELECT n.note_id FROM main.notes n WHERE NOT {seen_by_reader('n.note_id')}")]
    rowids: set[int] = set()
    for start in range(0, len(hidden_notes), 500):
        batch = hidden_notes[start:start + 500]
        rowids.update(row[0] for row in conn.execute(
            f"SELECT chunk_id FROM main.chunks WHERE note_id IN ({','.join('?' * len(batch))})", batch))
    rowids.update(row[0] for row in conn.execute(_unseen_anchor_rows()))
    return rowids


def _hidden_item_rows(conn: apsw.Connection) -> set[int]:
    """knowledge_fts rowids (item ids, current items only) the reader does not see."""
    return {row[0] for row in conn.execute(
        "SELECT d.id FROM main.knowledge_fts_docsize d"
        " WHERE NOT EXISTS (SELECT 1 FROM temp.knowledge_items k WHERE k.item_id = d.id)")}


# table -> (its visible ranking function, its hidden rows, whether the reader's own writes move
# them: an agent connection writes knowledge items, never notes or chunks).
INDEXES = {"chunks_fts": (VISIBLE_BM25, _hidden_chunk_rows, False),
           "knowledge_fts": ("mindtui_visible_item_bm25", _hidden_item_rows, True)}


def _tokens(conn: apsw.Connection, table: str, rowids: set[int]) -> int:
    tokens = 0
    ordered = sorted(rowids)
    for start in range(0, len(ordered), 500):
        batch = ordered[start:start + 500]
        # The table name comes from INDEXES, never from input.
        for (size,) in conn.execute(
                f"SELECT sz FROM main.{table}_docsize WHERE id IN ({','.join('?' * len(batch))})", batch):
            tokens += sum(_varints(size))
    return tokens


def ranking_function(conn: apsw.Connection, table: str = "chunks_fts") -> str:
    """The ranking function of the connection's next query of `table`: for an agent connection
    that hides rows of it, the table's visible BM25; else FTS5's own bm25 (with nothing hidden
    the same scores, to the bit, without a Python call per row). Brings the hidden rows'
    statistics up to date first."""
    states = _HIDDEN.get(conn)
    if states is None:
        return "bm25"  # an owner's connection: every row is seen
    function, hidden_rows, own_writes = INDEXES[table]
    state = states[table]
    version = (data_version(conn), conn.total_changes() if own_writes else 0)
    if state.version != version:
        rowids = hidden_rows(conn)
        state.rowids, state.tokens, state.version = frozenset(rowids), _tokens(conn, table, rowids), version
    return function if state.rowids else "bm25"


def register(conn: apsw.Connection) -> None:
    """Register each table's visible BM25 on an agent connection: `function(table, weights...)`
    as `bm25` takes it."""
    states = _HIDDEN[conn] = {}
    for table, (function, _, _) in INDEXES.items():
        states[table] = _HiddenRows()
        conn.register_fts5_function(function, _scorer(states[table]))


def _scorer(state: _HiddenRows):
    def count_visible(api: apsw.FTS5ExtensionApi, counter: list[int]) -> None:
        if api.rowid not in state.rowids:
            counter[0] += 1

    def score(api: apsw.FTS5ExtensionApi, *weights: float) -> float:
        if api.rowid in state.rowids:
            return HIDDEN_SCORE
        if api.aux_data is None:  # once per query: the visible rows' statistics
            rows = api.row_count - len(state.rowids)
            average = (api.column_total_size(-1) - state.tokens) / rows
            idf = []
            for phrase in range(api.phrase_count):
                hits = [0]
                api.query_phrase(phrase, count_visible, hits)
                weight = math.log((rows - hits[0] + 0.5) / (hits[0] + 0.5))
                idf.append(weight if weight > 0.0 else 1e-6)
            api.aux_data = (average, idf, list(weights) + [1.0] * (api.column_count - len(weights)))
        average, idf, column_weights = api.aux_data
        length_norm = _K1 * (1 - _B + _B * api.column_size(-1) / average)
        total = 0.0
        # The order of FTS5's own arithmetic, so that with nothing hidden the score is bm25's to
        # the bit (weight * count is its repeated addition while weights are whole numbers).
        for phrase, phrase_idf in enumerate(idf):
            freq = 0.0
            for column in api.phrase_columns(phrase):
                freq += column_weights[column] * len(api.phrase_column_offsets(phrase, column))
            total += phrase_idf * ((freq * (_K1 + 1.0)) / (freq + length_norm))
        return -1.0 * total

    return score
