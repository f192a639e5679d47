"""Query functions for edges, and what a reference edge is (vault.edges derives them in Python,
`reference_edges_sql` in SQL for an agent's view of a link that hidden notes change: one they made
ambiguous, or one to a hidden note that a later rule resolves)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import apsw

# A reference edge's values besides those its link gives (relation, rule, confidence, signal, evidence).
MENTION_WEIGHT = 1.0  # one reference; repeats of an edge add up (its weight is the mention count)
TYPE_DEFAULT_CONFIDENCE = 0.7
TYPE_DEFAULT_SIGNAL = "type_default"
TYPE_DEFAULT_RULE = "edge_defaults:{note_type}:{relation}"
# meta: the type registry's edge defaults as the last import derived edges with (JSON,
# {"default_type": name, "types": {name: [relation, ...]}}): what `reference_edges_sql` adds.
EDGE_DEFAULTS_KEY = "edge_defaults"


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


def reference_edges_sql(links: str) -> str:
    """SQL: the reference edges vault.edges.reference_edges derives from the resolved links in
    `links` (a table, view or CTE with the columns of note_links), with the edge defaults of
    EDGE_DEFAULTS_KEY: the columns of edges but edge_id (they are no rows), and `seq`, the first
    link's. The same edge repeated is one row, as `_dedup` makes it: the first link's values (by
    seq, the explicit edge before its defaults), the summed weight, the best confidence."""
    defaults = f"(SELECT value FROM main.meta WHERE key = '{EDGE_DEFAULTS_KEY}')"
    rule = "'" + TYPE_DEFAULT_RULE.format(note_type="' || n.type || '", relation="' || d.value || '") + "'"
    explicit = ("SELECT l.relation AS kind, l.note_id AS source_id, l.resolved_note_id AS target_id,"
                " 'explicit' AS provenance, l.rule_id AS rule_id, l.confidence AS confidence, l.signal AS signal,"
                f" l.evidence AS evidence, l.seq AS seq, -1 AS place FROM {links} l WHERE l.resolution = 'resolved'")
    # A type the registry does not know takes the default type's (TypeRegistry.note_type).
    by_type = (f"SELECT d.value, l.note_id, l.resolved_note_id, 'rule', {rule}, {TYPE_DEFAULT_CONFIDENCE},"
               f" '{TYPE_DEFAULT_SIGNAL}', l.evidence, l.seq, d.key FROM {links} l"
               f" JOIN main.notes n ON n.note_id = l.note_id, json_each({defaults}, '$.types') t, json_each(t.value) d"
               " WHERE l.resolution = 'resolved' AND t.key = coalesce("
               f"(SELECT u.key FROM json_each({defaults}, '$.types') u WHERE u.key = n.type),"
               f" json_extract({defaults}, '$.default_type'))")
    return ("SELECT r.kind, 'note' AS scope, r.source_id, r.target_id, r.source_id AS owner_note_id, r.provenance,"
            " r.rule_id, r.best AS confidence, r.signal, r.mentions AS weight, r.evidence, r.seq FROM ("
            f"SELECT x.*, row_number() OVER same AS nth, {MENTION_WEIGHT} * count(*) OVER same AS mentions,"
            " max(x.confidence) OVER same AS best"
            f" FROM ({explicit} UNION ALL {by_type}) x WINDOW same AS (PARTITION BY x.source_id, x.target_id, x.kind,"
            " x.rule_id ORDER BY x.seq, x.place ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)) r"
            " WHERE r.nth = 1")


def first_link_sql(edge: str) -> str:
    """SQL: the seq of the first resolved link the reference edge aliased `edge` was derived from
    (its evidence is that link's): an explicit edge's links name its relation and rule, every
    resolved link gives its target the type's defaults."""
    return (f"(SELECT min(l.seq) FROM main.note_links l WHERE l.note_id = {edge}.source_id AND l.resolution = 'resolved'"
            f" AND l.resolved_note_id = {edge}.target_id AND ({edge}.provenance = 'rule'"
            f" OR (l.relation = {edge}.kind AND l.rule_id = {edge}.rule_id)))")


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
