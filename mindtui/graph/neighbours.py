"""A note's neighbours, grouped by signal: what belongs together, and why.

Groups: links_out, backlinks, relations (typed; symmetric ones read both ways), type_defaults,
change (edited in one session), search (found together), suggestions (similar by meaning but
not linked yet, with their cosine). Every entry carries provenance, confidence, weight and the
evidence it came from. Reads stored vectors only: no model is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import apsw

from mindtui.config import Settings
from mindtui.errors import AmbiguousNote, NoteNotFound
from mindtui.graph.change_graph import OUTSIDE_PREFIX, confidence_of
from mindtui.graph.suggest import best_cosine, cascade, fuse, shared_link_scores, similar_notes
from mindtui.store import graph_store, names
from mindtui.store.meta import EMBEDDING_MODEL_KEY, get_meta

GROUPS = ("links_out", "backlinks", "relations", "type_defaults", "change", "search", "suggestions")




@dataclass
class Neighbour:
    note_id: str | None  # None for a note outside the index (change graph only)
    path: str
    title: str
    kind: str
    provenance: str
    confidence: float
    weight: float
    evidence: str | None
    extra: dict = field(default_factory=dict)  # direction, cosine, confirmed, indexed

    def as_dict(self) -> dict:
        data = {k: v for k, v in self.__dict__.items() if k != "extra"}
        return {**data, **self.extra}


def find_note(conn: apsw.Connection, name: str) -> graph_store.NoteRef:
    """NOTE as a note_id, vault path (with or without .md), title, alias or file name; never a guess."""
    how, found = names.notes_named(conn, name)
    if len(found) == 1:
        return graph_store.NoteRef(found[0].note_id, found[0].path, found[0].title, found[0].aliases)
    if found:
        listed = ", ".join(note.path for note in found[:8])
        raise AmbiguousNote(f"{name!r} is ambiguous: {len(found)} notes match by {how}: {listed}; "
                           "give the vault path")
    raise NoteNotFound(f"no note {name!r} (tried note id, path, title, alias and file name)")


def _ref_of(other_id: str, refs: dict[str, graph_store.NoteRef]) -> tuple[str | None, str, str, bool]:
    if other_id in refs:
        ref = refs[other_id]
        return ref.note_id, ref.path, ref.title, True
    if other_id.startswith(OUTSIDE_PREFIX):
        path = other_id[len(OUTSIDE_PREFIX):]
        return None, path, path.rpartition("/")[2].removesuffix(".md"), False
    return other_id, "", "", False  # an edge to a note deleted since: shown, marked


def neighbours(conn: apsw.Connection, settings: Settings, note: graph_store.NoteRef,
               symmetric: frozenset[str], groups: tuple[str, ...] = GROUPS) -> dict[str, list[Neighbour]]:
    result: dict[str, list[Neighbour]] = {g: [] for g in groups}
    edges = graph_store.note_edges(conn, note.note_id)
    pairs = graph_store.search_pairs_of(conn, note.note_id) if "search" in groups else []
    refs = graph_store.notes_by_id(conn, sorted({e.other_id for e in edges} | {p[0] for p in pairs}))

    seen: dict[tuple[str, str, str], Neighbour] = {}
    # Change edges in the order of their work logs (a stable sort: the others keep theirs).
    for edge in sorted(edges, key=lambda e: e.rule_id if e.signal == graph_store.CHANGE_SIGNAL else ""):
        group = _group_of(edge, symmetric)
        if group not in result:
            continue
        if (group, edge.other_id, edge.kind) in seen:
            # One entry per note and relation (A->B and B->A of a symmetric one, a link written
            # twice); the pair's change edges of several work logs add up.
            if group == "change":
                _add_sessions(seen[(group, edge.other_id, edge.kind)], edge)
            continue
        note_id, path, title, indexed = _ref_of(edge.other_id, refs)
        if not path:
            continue  # an edge to a note deleted since: the next import or graph refresh drops it
        direction = "both" if edge.kind in symmetric or group == "change" else edge.direction
        extra = {"direction": direction} if group in ("relations", "type_defaults", "change") else {}
        if group == "change":
            extra["indexed"] = indexed
        entry = Neighbour(note_id, path, title, edge.kind, edge.provenance, edge.confidence, edge.weight,
                          edge.evidence, extra)
        seen[(group, edge.other_id, edge.kind)] = entry
        result[group].append(entry)

    confirmed_at = settings.graph.search_confirmed_weight
    queries_with: dict[str, list[str]] = {}
    for query, results in (graph_store.recent_searches_with(conn, note.note_id) if pairs else []):
        for other in results:
            if len(queries_with.setdefault(other, [])) < 3 and query not in queries_with[other]:
                queries_with[other].append(query)
    for other, weight, last_seen in pairs:
        if other not in refs:
            continue
        ref = refs[other]
        evidence = "; ".join(f"“{q}”" for q in queries_with.get(other, []))
        result["search"].append(Neighbour(
            ref.note_id, ref.path, ref.title, "found_with", "signal", min(1.0, weight / confirmed_at),
            float(weight), evidence or None, {"confirmed": weight >= confirmed_at, "last_seen": last_seen}))

    if "suggestions" in result:
        linked = {e.other_id for e in edges if e.provenance in ("explicit", "rule")}
        result["suggestions"] = suggestions(conn, settings, note, linked)
    for group, entries in result.items():
        if group in ("change", "search"):
            entries.sort(key=lambda n: (-n.weight, n.path))
        elif group != "suggestions":
            entries.sort(key=lambda n: (n.path, n.kind))
    return result


def _add_sessions(entry: Neighbour, edge: graph_store.EdgeView) -> None:
    """A change entry with the sessions of one more work log's edge."""
    entry.weight += edge.weight
    entry.confidence = confidence_of(int(entry.weight))
    if edge.evidence:
        entry.evidence = f"{entry.evidence} | {edge.evidence}" if entry.evidence else edge.evidence


def _group_of(edge: graph_store.EdgeView, symmetric: frozenset[str]) -> str:
    if edge.signal == graph_store.CHANGE_SIGNAL:
        return "change"
    if edge.provenance == "rule":
        return "type_defaults"
    if edge.provenance != "explicit":
        return ""
    if edge.kind == "links_to":
        return "links_out" if edge.direction == "out" else "backlinks"
    return "relations"


def suggestions(conn: apsw.Connection, settings: Settings, note: graph_store.NoteRef,
                linked: set[str]) -> list[Neighbour]:
    """Notes not linked with this one (either way) that share its links or are close in meaning.

    `graph.suggest_with` picks the ranking (bench/link_eval.py measures them on held-out links):
    "links>vector" (default) = notes sharing rarely-linked neighbours first (Adamic-Adar), then
    the closest in meaning fill the remaining places; "links", "vector", or "vector+links" (RRF).
    Below `graph.suggest_min_cosine` similarity alone suggests nothing.
    """
    model_id = get_meta(conn, EMBEDDING_MODEL_KEY)
    count = settings.graph.suggestions
    floor = settings.graph.suggest_min_cosine
    mode = settings.graph.suggest_with
    similar = similar_notes(conn, note.note_id, model_id, k=count * 4 + 8) if model_id and "vector" in mode else {}
    shared = shared_link_scores(conn, note.note_id) if "links" in mode else {}
    close = {n: c for n, c in similar.items() if c >= floor}
    exclude = linked | {note.note_id}
    if mode == "links>vector":
        ranked = cascade([shared, close], exclude, count)
    else:
        ranked = fuse([r for name, r in (("links", shared), ("vector", close)) if name in mode], exclude, count)
    refs = graph_store.notes_by_id(conn, [o for o, _ in ranked])
    out = []
    for other, score in ranked:
        if other not in refs:
            continue
        # Every suggestion carries its cosine, also one that shared links brought in.
        cosine = similar[other] if other in similar else (best_cosine(conn, note.note_id, other, model_id)
                                                          if model_id else None)
        extra = {"cosine": round(cosine, 4) if cosine is not None else None}
        if other in shared:
            extra["shared_links"] = round(shared[other], 4)
        out.append(Neighbour(other, refs[other].path, refs[other].title, "similar_to", "signal",
                             round(cosine or 0.0, 4), round(score, 6), None, extra))
    return out
