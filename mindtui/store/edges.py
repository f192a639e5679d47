"""Query functions for edges, and the values of a reference edge that its link does not give."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import apsw

# A reference edge's values besides those its link gives (relation, rule, confidence, signal, evidence).
MENTION_WEIGHT = 1.0  # one reference; repeats of an edge add up (its weight is the mention count)
TYPE_DEFAULT_CONFIDENCE = 0.7
TYPE_DEFAULT_SIGNAL = "type_default"
TYPE_DEFAULT_RULE = "edge_defaults:{note_type}:{relation}"


def type_default_rule(note_type: str, relation: str) -> str:
    return TYPE_DEFAULT_RULE.format(note_type=note_type, relation=relation)


@dataclass(frozen=True)
class EdgeRow:
    kind: str
    scope: str  # note | chunk
    source_id: str
    target_id: str
    owner_note_id: str | None
    provenance: str  # explicit | rule | signal (structure: the chunks' order, no rows since migration 0016)
    rule_id: str
    confidence: float
    signal: str
    weight: float
    evidence: str | None

    @property
    def dedup_key(self) -> tuple[str, str, str, str, str]:
        return (self.source_id, self.target_id, self.kind, self.scope, self.rule_id)



def insert_edges(conn: apsw.Connection, edges: Iterable[EdgeRow]) -> None:
    conn.executemany(
        "INSERT INTO edges (kind, scope, source_id, target_id, owner_note_id, provenance, rule_id,"
        " confidence, signal, weight, evidence) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        [(e.kind, e.scope, e.source_id, e.target_id, e.owner_note_id, e.provenance, e.rule_id,
          e.confidence, e.signal, e.weight, e.evidence) for e in edges],
    )


def owned_signal_edges(conn: apsw.Connection, note_id: str) -> list[EdgeRow]:
    """The signal edges a note owns (a work log's change edges): rewriting the note deletes them
    with it (the owner's foreign key), the importer puts them back until the next graph build."""
    return [EdgeRow(*row) for row in conn.execute(
        "SELECT kind, scope, source_id, target_id, owner_note_id, provenance, rule_id, confidence, signal, weight,"
        " evidence FROM main.edges WHERE owner_note_id = ? AND provenance = 'signal'", (note_id,))]


def delete_reference_edges(conn: apsw.Connection, note_id: str) -> None:
    """Drop the explicit and type-default edges a note owns (its signal edges stay)."""
    conn.execute(
        "DELETE FROM edges WHERE owner_note_id = ? AND provenance IN ('explicit', 'rule')", (note_id,)
    )


def edge_counts(conn: apsw.Connection) -> dict[str, int]:
    """Totals the import report shows."""
    row = conn.execute(
        "SELECT"
        " count(*) FILTER (WHERE provenance = 'explicit'),"
        " count(*) FILTER (WHERE provenance = 'explicit' AND signal = 'wikilink'),"
        " count(*) FILTER (WHERE provenance = 'explicit' AND signal = 'inline'),"
        " count(*) FILTER (WHERE provenance = 'explicit' AND signal = 'callout'),"
        " count(*) FILTER (WHERE provenance = 'explicit' AND signal = 'frontmatter'),"
        " count(*) FILTER (WHERE provenance = 'rule' AND signal = 'type_default'),"
        # The structure edges are the chunks' own order (note_id, seq), not rows (migration 0016):
        # each note's chunks belong_to it, and each consecutive pair is one next and one prev.
        " (SELECT 3 * count(*) - 2 * count(DISTINCT note_id) FROM chunks)"
        " FROM edges"
    ).fetchone()
    keys = ("explicit_total", "wikilink_total", "inline_total", "callout_total", "frontmatter_total",
            "defaults_total", "structure_total")
    return dict(zip(keys, row))
