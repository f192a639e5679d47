"""Derive a note's edges from its resolved references and its type. (Its chunks' structure,
belongs_to and next/prev, is not stored as edges: the chunks' note_id and seq are that chain.)

Pure functions: the importer calls them inside the note's transaction, and again for a
note whose references resolve differently after other notes changed. (store.edges.reference_edges_sql
derives the same rows in SQL, for an agent's view: change one, change the other.)
"""

from __future__ import annotations

from typing import Iterable, Protocol

from mindtui.store.edges import (MENTION_WEIGHT, TYPE_DEFAULT_CONFIDENCE, TYPE_DEFAULT_SIGNAL, EdgeRow,
                                 type_default_rule)


class ResolvedReference(Protocol):
    relation: str
    signal: str
    rule_id: str
    confidence: float
    evidence: str
    target_note_id: str


def _dedup(rows: Iterable[EdgeRow]) -> list[EdgeRow]:
    """One row per dedup key; repeats raise the weight (mention count) and keep the best confidence."""
    merged: dict[tuple, EdgeRow] = {}
    for row in rows:
        key = row.dedup_key
        if key in merged:
            old = merged[key]
            merged[key] = EdgeRow(**{**old.__dict__, "weight": old.weight + row.weight,
                                     "confidence": max(old.confidence, row.confidence)})
        else:
            merged[key] = row
    return list(merged.values())


def reference_edges(note_id: str, note_type: str, edge_defaults: Iterable[str],
                    references: Iterable[ResolvedReference]) -> list[EdgeRow]:
    """Explicit edges for resolved references plus the type's default relations for each target."""
    defaults = tuple(edge_defaults)
    rows: list[EdgeRow] = []
    for ref in references:
        rows.append(EdgeRow(ref.relation, "note", note_id, ref.target_note_id, note_id, "explicit",
                            ref.rule_id, ref.confidence, ref.signal, MENTION_WEIGHT, ref.evidence))
        for relation in defaults:
            rows.append(EdgeRow(relation, "note", note_id, ref.target_note_id, note_id, "rule",
                                type_default_rule(note_type, relation), TYPE_DEFAULT_CONFIDENCE,
                                TYPE_DEFAULT_SIGNAL, MENTION_WEIGHT, ref.evidence))
    return _dedup(rows)

