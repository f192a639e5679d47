"""The audience rule, enforced by the connection itself.

A connection opened for `agent` gets TEMP views named like the tables they hide (notes,
chunks, note_links, edges, search_pairs, search_log, search_opens, job_runs, note_embeddings and the
views built on them).
SQLite resolves an unqualified name in the temp schema first, so every query function reads
the filtered rows without knowing it: nothing can forget the rule, and a new query is covered
the day it is written. What an agent connection never sees:

- notes that are private or have `ai_processing: none`, their chunks (so full-text and vector
  hits of them map to nothing), their references and every edge that touches them;
- their effect on what it sees: a link is what it would be without them (to a hidden note:
  missing, or what a later rule finds, as `[[Same]]` to a hidden `Same.md` at the top resolves to
  a visible `folder1/Same.md`; ambiguous between one visible note and hidden ones: resolved to
  the visible one; each with the edges the importer gives a resolved link), so no count and no
  edge moves with a hidden note;
- change-graph nodes outside the index (`path:...`: their privacy is unknown, so fail-closed);
  the change edges of a hidden work log (each is owned by its log; one with no owner, fail-closed);
  change-graph evidence is cut to the session keys (the work-log row may name hidden notes);
- search pairs with a hidden end; other audiences' logged queries; job reports and errors
  (they carry file paths and warnings of every note); the curation queue (the owner's);
- knowledge items that are private, stated in a hidden note or about one, their sources, the
  `superseded_by` that names one, and the writer's decision log (the owner's);

Writes from an agent connection name `main.` tables explicitly (the search log; the knowledge
writer, which decides an agent's proposals on such a connection so that no rule sees a hidden item).
Links inside visible text to notes an agent may not see are redacted by the service (service.redact).
"""

from __future__ import annotations

import apsw

from mindtui.audience import Audience
from mindtui.store.edges import first_link_sql, reference_edges_sql
from mindtui.text.globs import excluded_by

# The hidden-note rule, written here only: other store modules take their SQL from these.

def model_readable(note: str) -> str:
    """SQL: a model may read the text of the `notes` row aliased `note` (embedder, reranker,
    extraction): its `ai_processing` is not `none`, whatever the audience."""
    return f"{note}.ai_processing = 1"


def open_to_agents(note: str) -> str:
    """SQL: by the flags stored at import, an agent may see the `notes` row aliased `note`
    (rows built at import for agents to read, such as anchor text, are built from these)."""
    return f"{note}.private = 0 AND {model_readable(note)}"


# The most notes an agent's view of one link resolves among: an ambiguous link's candidates or a
# later rule's notes (resolve._later_rules stores `[]` for more). A link among more stays ambiguous
# to every reader, as it does unless all but one of them are hidden: reading 1,000 candidates of
# each `[[index]]` link (a vault with an index.md in every folder) took an agent's every edges
# query 246 ms.
LINK_NOTES_MAX = 16


def few_candidates(link: str) -> str:
    """SQL: the ambiguous link aliased `link` is among at most LINK_NOTES_MAX notes (as the
    partial index note_links_ambiguous_few, migration 0020, reads it)."""
    return f"json_array_length({link}.candidates) <= {LINK_NOTES_MAX}"


def hidden_by_flags(note: str) -> str:
    """SQL: NOT open_to_agents(note), as the partial index notes_hidden (migration 0019) reads it:
    the few notes it hides are found without reading the others."""
    return f"({note}.private = 1 OR {note}.ai_processing = 0)"


def item_visible(item: str, note_visible) -> str:
    """SQL: an agent may see the knowledge_items row aliased `item`: shared, and its source note
    and subject note (when it has them) pass `note_visible(column)`."""
    return (f"{item}.visibility = 'shared'"
            f" AND ({item}.source_note_id IS NULL OR {note_visible(item + '.source_note_id')})"
            f" AND ({item}.about_note_id IS NULL OR {note_visible(item + '.about_note_id')})")


def item_open_to_agents(item: str) -> str:
    """SQL: by the flags stored at import, an agent may see the knowledge_items row aliased `item`
    (the consolidation keeps such items apart from the others)."""
    return item_visible(item, lambda column: f"EXISTS (SELECT 1 FROM main.notes n WHERE n.note_id = {column}"
                                             f" AND {open_to_agents('n')})")


def seen_by_reader(note_id: str) -> str:
    """SQL: the connection that runs the query sees the note `note_id` (its `notes`: an agent's
    hide what `restrict` hides, an owner's show every note)."""
    return f"EXISTS (SELECT 1 FROM notes v WHERE v.note_id = {note_id})"


# The one definition of a note an agent may see, for a `main.notes` row aliased `n`. Besides
# the flags stored at import, the reader's own privacy.private_paths apply at once (a folder
# added to the setting is hidden before the next import), through a function each agent
# connection registers (left out of the SQL when there are no such paths: it costs a Python
# call per row).
PRIVATE_PATH_FUNCTION = "mindtui_private_path"
AGENT_VISIBLE = open_to_agents("n")


def _agent_visible(private_paths: tuple[str, ...]) -> str:
    return AGENT_VISIBLE + (f" AND NOT {PRIVATE_PATH_FUNCTION}(n.path)" if private_paths else "")


def _columns(conn: apsw.Connection, table: str, alias: str, replaced: dict[str, str]) -> str:
    """The table's columns in order, as `alias.column`, except those given another expression."""
    return ", ".join(f"{replaced[name]} AS {name}" if name in replaced else f"{alias}.{name}"
                     for name in (row[1] for row in conn.execute(f"PRAGMA main.table_info({table})")))


def _agent_views(conn: apsw.Connection, private_paths: tuple[str, ...], history: bool) -> list[str]:
    visible_note = _agent_visible(private_paths)

    def _visible(column: str) -> str:
        return f"EXISTS (SELECT 1 FROM main.notes n WHERE n.note_id = {column} AND {visible_note})"

    def _hidden_any(*columns: str) -> str:
        return (f"NOT EXISTS (SELECT 1 FROM main.notes n WHERE n.note_id IN ({', '.join(columns)})"
                f" AND NOT ({visible_note}))")

    def _visible_item(alias: str) -> str:
        return item_visible(alias, _visible)

    item_columns = _columns(conn, "knowledge_items", "k", {
        # A visible item superseded by one the agent may not see was, to the agent, just ended.
        "superseded_by": "CASE WHEN EXISTS (SELECT 1 FROM main.knowledge_items s WHERE s.item_id = k.superseded_by"
                         f" AND {_visible_item('s')}) THEN k.superseded_by END"})
    # A link is to an agent what it would be without the notes it may not see: one that resolves
    # to a hidden note is missing (unless a later rule finds another, below); an ambiguous one
    # among visible and hidden notes resolves to the one visible candidate (is `self` when that
    # is the linking note), is missing with none, stays ambiguous with several.
    visible_candidates = f"(SELECT count(*) FROM json_each(l.candidates) j WHERE {_visible('j.value')})"
    few = few_candidates("l")
    hidden_candidate = (f"(l.resolution = 'ambiguous' AND {few} AND EXISTS (SELECT 1 FROM json_each(l.candidates) j"
                        f" WHERE NOT {_visible('j.value')}))")
    to_hidden = f"(l.resolved_note_id IS NOT NULL AND NOT {_visible('l.resolved_note_id')})"
    # An ambiguous link's one visible candidate (NULL: none, or several); with one, the others are hidden.
    sole_visible = (f"(SELECT CASE WHEN count(*) = 1 THEN max(j.value) END FROM json_each(l.candidates) j"
                    f" WHERE {_visible('j.value')})")
    # When the agent may see none of the notes that decide a link (its target, or candidates), a
    # later rule decides, as in the vault without them (note_links.fallback, resolve._later_rules):
    # the first with a note the agent may see; resolved to that one, ambiguous among several.
    blocked = (f"(l.fallback != '[]' AND ({to_hidden} OR (l.resolution = 'ambiguous' AND {few}"
               f" AND {visible_candidates} = 0)))")
    # An empty rule stands for many notes (LINK_NOTES_MAX): it decides, ambiguous.
    later_rule = (f"(SELECT t.value FROM json_each(l.fallback) t WHERE t.value = '[]' OR EXISTS (SELECT 1"
                  f" FROM json_each(t.value) j WHERE {_visible('j.value')}) ORDER BY t.key LIMIT 1)")
    later_sole = (f"(SELECT CASE WHEN count(*) = 1 THEN max(j.value) END FROM json_each({later_rule}) j"
                  f" WHERE {_visible('j.value')})")
    resolved_for_agent = (f"CASE WHEN {blocked} THEN {later_sole} WHEN {to_hidden} THEN NULL"
                          f" WHEN l.resolution = 'ambiguous' AND {few} THEN {sole_visible} ELSE l.resolved_note_id END")
    link_columns = _columns(conn, "note_links", "l", {
        "detail": "''", "candidates": "'[]'", "fallback": "'[]'",
        "resolution": f"CASE WHEN {blocked} THEN CASE WHEN {later_rule} IS NULL THEN 'missing'"
                      f" WHEN {later_sole} = l.note_id THEN 'self' WHEN {later_sole} IS NOT NULL THEN 'resolved'"
                      f" ELSE 'ambiguous' END"
                      f" WHEN {to_hidden} THEN 'missing' WHEN {hidden_candidate} THEN CASE WHEN"
                      f" {visible_candidates} = 0 THEN 'missing' WHEN {sole_visible} = l.note_id THEN 'self'"
                      f" WHEN {sole_visible} IS NOT NULL THEN 'resolved' ELSE 'ambiguous' END ELSE l.resolution END",
        "resolved_note_id": resolved_for_agent})
    # The edges of such a link: the importer made none (it was ambiguous). The agent's view has
    # those it would have made for it resolved (`added`), each one edge with the note's stored
    # edge of the same key when another link made that too (the mentions add up, the first link's
    # evidence counts). Materialized CTEs of the few ambiguous links, not the note_links view: an
    # edges query is compiled again for each new bound value pushed into a window, a LEFT JOIN or
    # next to a WHERE EXISTS (0.3 ms for this SQL; the edges view used to compile in 0.02 ms).
    # The links a later rule decides for the agent (`blocked`) are among these two (each read by its index).
    linked = "SELECT l.note_id, l.seq, l.relation, l.rule_id, l.confidence, l.signal, l.evidence,"
    # A resolved link is blocked by its target: read from the hidden notes (their index; CROSS JOIN
    # keeps them first, else SQLite reads every link with later rules), and with the reader's own
    # private_paths also from the links a later rule may resolve to one note (not '[[]]': many).
    def through_hidden_target(tables: str, hidden: str, only: str) -> str:
        return (f"{linked} {later_sole} AS target FROM {tables} ON l.resolved_note_id = h.note_id"
                f" WHERE {hidden} AND l.resolution = 'resolved' AND {only} AND {_visible('l.note_id')}")

    ambiguous = (f"{linked} CASE WHEN {blocked} THEN {later_sole} ELSE {sole_visible} END AS target"
                 f" FROM main.note_links l WHERE l.resolution = 'ambiguous' AND {few} AND {_visible('l.note_id')}"
                 " UNION ALL " + through_hidden_target("main.notes h CROSS JOIN main.note_links l",
                                                       hidden_by_flags("h"), "l.fallback != '[]'"))
    if private_paths:
        ambiguous += " UNION ALL " + through_hidden_target(
            "main.note_links l JOIN main.notes h", f"{open_to_agents('h')} AND {PRIVATE_PATH_FUNCTION}(h.path)",
            "l.fallback NOT IN ('[]', '[[]]')")
    same_key = ("a.source_id = e.source_id AND a.target_id = e.target_id AND a.kind = e.kind AND a.scope = e.scope"
                " AND a.rule_id = e.rule_id")
    added_columns = _columns(conn, "edges", "a", {
        "edge_id": "e.edge_id", "confidence": "max(a.confidence, coalesce(e.confidence, a.confidence))",
        "weight": "a.weight + coalesce(e.weight, 0)",
        "evidence": f"CASE WHEN e.edge_id IS NULL OR a.seq < {first_link_sql('e')} THEN a.evidence ELSE e.evidence END"})
    edge_columns = _columns(conn, "edges", "e", {
        "evidence": "CASE WHEN e.signal = 'change' AND instr(e.evidence, ' · ') > 0"
                    " THEN substr(e.evidence, 1, instr(e.evidence, ' · ') - 1) ELSE e.evidence END"})
    job_columns = _columns(conn, "job_runs", "e", {
        "report": "'{}'",
        "error": "CASE WHEN e.error IS NULL THEN NULL ELSE 'failed (details for the owner only)' END"})
    return [
        f"CREATE TEMP VIEW notes AS SELECT n.* FROM main.notes n WHERE {visible_note}",
        f"CREATE TEMP VIEW chunks AS SELECT c.* FROM main.chunks c WHERE {_visible('c.note_id')}",
        f"CREATE TEMP VIEW note_names AS SELECT k.* FROM main.note_names k WHERE {_visible('k.note_id')}",
        # `detail` may list the candidates of an ambiguous link, hidden ones among them.
        f"CREATE TEMP VIEW note_links AS SELECT {link_columns} FROM main.note_links l WHERE {_visible('l.note_id')}",
        # A change edge is owned by its work log: hidden with it, and with no owner (a log outside
        # the index, or a graph built before edges had owners) its log's privacy is unknown.
        f"CREATE TEMP VIEW edges AS WITH ambiguous AS MATERIALIZED ({ambiguous}), agent_resolved AS"
        " (SELECT l.*, 'resolved' AS resolution, l.target AS resolved_note_id FROM ambiguous l"
        " WHERE l.target IS NOT NULL AND l.target != l.note_id),"
        f" added AS MATERIALIZED (SELECT {added_columns} FROM ({reference_edges_sql('agent_resolved')}) a"
        f" LEFT JOIN main.edges e ON {same_key})"
        f" SELECT {edge_columns} FROM main.edges e WHERE"
        " e.source_id NOT LIKE 'path:%' AND e.target_id NOT LIKE 'path:%'"
        " AND NOT (e.signal = 'change' AND e.owner_note_id IS NULL) AND "
        + _hidden_any("e.source_id", "e.target_id", "e.owner_note_id")
        + f" AND NOT EXISTS (SELECT 1 FROM added a WHERE {same_key}) UNION ALL SELECT * FROM added",
        # Found together in the owner's searches: their history, an agent's only when it may use it.
        "CREATE TEMP VIEW search_pairs AS SELECT p.* FROM main.search_pairs p WHERE "
        + (f"{_visible('p.note_a')} AND {_visible('p.note_b')}" if history else "0"),
        "CREATE TEMP VIEW search_log AS SELECT s.* FROM main.search_log s WHERE s.audience = 'agent'",
        # What the owner opened after a search is the owner's (usage memory reads main rows itself).
        "CREATE TEMP VIEW search_opens AS SELECT o.* FROM main.search_opens o WHERE 0",
        f"CREATE TEMP VIEW job_runs AS SELECT {job_columns} FROM main.job_runs e",
        # The curation queue is the owner's conversation with mindtui: nothing of it for an agent.
        "CREATE TEMP VIEW curation_items AS SELECT c.* FROM main.curation_items c WHERE 0",
        "CREATE TEMP VIEW curation_actions AS SELECT a.* FROM main.curation_actions a WHERE 0",
        # Knowledge items: shared ones only, and only while their source note and the note they are
        # about are visible (an item stated in or about a hidden note would tell what it says).
        f"CREATE TEMP VIEW knowledge_items AS SELECT {item_columns} FROM main.knowledge_items k WHERE {_visible_item('k')}",
        "CREATE TEMP VIEW knowledge_sources AS SELECT s.* FROM main.knowledge_sources s WHERE"
        " EXISTS (SELECT 1 FROM temp.knowledge_items k WHERE k.item_id = s.item_id) AND (s.source_type != 'note' OR "
        + _visible("substr(s.source_id, 1, instr(s.source_id, '#') - 1)") + ")",
        # What the writer was handed and why it decided so is the owner's (proposals may name anything).
        "CREATE TEMP VIEW knowledge_decisions AS SELECT d.* FROM main.knowledge_decisions d WHERE 0",
        # Views of the main schema read main tables: shadow them with the same definition over the filtered ones.
        "CREATE TEMP VIEW unresolved_links AS SELECT note_id, seq, target_raw, resolution AS reason, detail,"
        " line, evidence FROM note_links WHERE resolution IN ('missing', 'ambiguous', 'out_of_corpus')",
        # Note vectors (the mean of a note's chunk vectors) of the notes the agent sees only.
        f"CREATE TEMP VIEW note_embeddings AS SELECT ne.* FROM main.note_embeddings ne WHERE {_visible('ne.note_id')}",
        "CREATE TEMP VIEW chunk_vectors AS SELECT c.chunk_id, c.note_id, e.model_id, c.content_hash,"
        " e.embedding_id FROM chunks c JOIN embeddings e ON e.content_hash = c.content_hash",
    ]


def restrict(conn: apsw.Connection, audience: Audience, private_paths: tuple[str, ...] = (),
             history: bool = False) -> None:
    """Make `conn` read as `audience` sees the store (owner: everything). `private_paths`: the
    reader's privacy.private_paths, hidden whatever the stored flags say. `history`
    (privacy.agent_uses_history): an agent reads the found-together pairs the owner's searches
    taught; without it they are the owner's, as the searches are."""
    if audience is Audience.OWNER:
        return
    if audience is not Audience.AGENT:
        raise ValueError(f"unknown audience {audience!r}")
    patterns = tuple(private_paths)
    conn.create_scalar_function(PRIVATE_PATH_FUNCTION,
                                lambda path: int(bool(patterns) and excluded_by(path, patterns) is not None),
                                1, deterministic=True)
    for statement in _agent_views(conn, patterns, history):
        conn.execute(statement)
    from mindtui.store import visible_rank  # it reads this module's rule: imported once both exist

    visible_rank.register(conn)


def audience_of(conn: apsw.Connection) -> Audience:
    """Which audience the connection reads as (from its temp schema)."""
    row = conn.execute("SELECT 1 FROM temp.sqlite_schema WHERE type = 'view' AND name = 'notes'").fetchone()
    return Audience.AGENT if row else Audience.OWNER
