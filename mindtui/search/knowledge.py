"""Knowledge items as search results: their own full-text and vector lists, fused like the notes'.

Only current items are found. Items are few (hundreds, thousands), so their vectors are compared
with the query in numpy rather than through the KNN over every chunk. The connection's audience
applies (an agent's `knowledge_items` view holds only what it may see). With a note filter
(type, tag, path) an item counts when the note it is about, or the note it was stated in, passes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

import apsw

from mindtui.config import Settings
from mindtui.lazy_import import lazy_module
from mindtui.search import fusion
from mindtui.search.query import ParsedQuery
from mindtui.store import knowledge_store
from mindtui.store import search_store
from mindtui.text import analysis

np = lazy_module("numpy")  # a full-text search never imports it (see lazy_import)

KINDS = (None, "notes", "knowledge")
LOG_PREFIX = "knowledge:"  # how an item stands in search_log.results beside note ids


@dataclass
class ItemHit:
    item: knowledge_store.KnowledgeItem
    score: float
    explain: dict
    note_id: str  # the note to open for it: where it was stated, else what it is about ("" for neither)
    path: str


def _vector_list(conn: apsw.Connection, query_vector: Callable[[], tuple[str, np.ndarray] | None], pool: int,
                 min_cosine: float) -> list[tuple[int, float]]:
    found = query_vector()
    if found is None:
        return []
    model_id, vector = found
    rows = knowledge_store.current_item_vectors(conn, model_id)
    if not rows:
        return []
    matrix = np.stack([np.frombuffer(blob, dtype=np.float32) for _, blob in rows])
    query = np.asarray(vector, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1) * max(float(np.linalg.norm(query)), 1e-12)
    cosines = (matrix @ query) / np.maximum(norms, 1e-12)
    ranked = sorted(((item_id, float(c)) for (item_id, _), c in zip(rows, cosines) if c >= min_cosine),
                    key=lambda pair: (-pair[1], pair[0]))
    return ranked[:pool]


def _coverage(item: knowledge_store.KnowledgeItem, stems: tuple[frozenset[str], ...]) -> float:
    """The share of the query's words the item's text holds (any language's stem)."""
    if not stems:
        return 0.0
    words = {w for w in analysis.words(" ".join([item.title, item.body, item.quote or ""]))}
    found = {stem for w in words for stem in analysis.stem_all_languages(w)}
    return sum(1 for group in stems if group & found) / len(stems)


def _convex(conn, query: ParsedQuery, ranked: dict, reference: dict, options) -> dict[str, float]:
    """Item scores on the notes' convex scale. BM25 of the small item table is not comparable with
    the chunks' (other term statistics): an item's full-text score is the share of the query's
    words it holds times the best note's normalised full-text score. Cosines are comparable: the
    items' are normalised together with the notes' candidates."""
    lists: dict[str, dict[str, float]] = {}
    if ranked.get("fts"):
        keys = [key for key, _ in ranked["fts"]]
        items = knowledge_store.items_by_id(conn, [int(k[len(LOG_PREFIX):]) for k in keys])
        top = max(fusion.normalised("fts", reference["fts"], options.convex_normalisation).values(), default=1.0) \
            if reference.get("fts") else 1.0
        lists["fts"] = {k: _coverage(items[int(k[len(LOG_PREFIX):])], query.stems) * top
                        for k in keys if int(k[len(LOG_PREFIX):]) in items}
    if ranked.get("vector"):
        pooled = sorted(ranked["vector"] + list(reference.get("vector", [])), key=lambda pair: -pair[1])
        scores = fusion.normalised("vector", pooled, options.convex_normalisation)
        lists["vector"] = {k: scores[k] for k, _ in ranked["vector"]}
    present = [name for name in ("fts", "vector") if lists.get(name) or reference.get(name)]
    share = {"vector": options.convex_alpha, "fts": 1.0 - options.convex_alpha}
    fused: dict[str, float] = {}
    for name, scores in lists.items():
        weight = 1.0 if len(present) == 1 else share[name]
        for key, value in scores.items():
            fused[key] = fused.get(key, 0.0) + weight * value
    return fused


def knowledge_hits(conn: apsw.Connection, settings: Settings, query: ParsedQuery, mode: str, limit: int,
                   query_vector: Callable[[], tuple[str, np.ndarray] | None],
                   note_filter: tuple[str | None, str | None, str | None] = (None, None, None),
                   reference: dict[str, list[tuple[str, float]]] | None = None) -> list[ItemHit]:
    """The best `limit` current items for the query, best first. `reference`: the notes' candidate
    lists of the same search (raw scores by list): the items' lists are normalised and fused
    together with them, so an item's score is on the notes' scale (a lone full-text hit is not
    worth 1.0 beside notes that stand out by 3 deviations)."""
    options = settings.search
    pool = options.candidate_pool
    lists: dict[str, list[tuple[int, float]]] = {}
    if mode in ("fts", "hybrid"):
        lists["fts"] = knowledge_store.fts_items(conn, query.fts, pool) if query.fts else []
    if mode in ("vector", "hybrid") and query.words:
        lists["vector"] = _vector_list(conn, query_vector, pool, options.min_cosine)
    ranked = {name: [(f"{LOG_PREFIX}{item_id}", score) for item_id, score in hits] for name, hits in lists.items()}
    if options.fusion == "convex":
        fused = _convex(conn, query, ranked, reference or {}, options)
    else:
        pooled = {name: sorted(hits + list((reference or {}).get(name, [])), key=lambda pair: pair[1],
                               reverse=name not in fusion.LOWER_IS_BETTER) for name, hits in ranked.items()}
        weights = {k: v for k, v in dataclasses.asdict(options.rrf_weights).items() if k in pooled}
        mine = {key for hits in ranked.values() for key, _ in hits}
        fused = {k: v for k, v in fusion.rrf(pooled, options.rrf_k, weights).items() if k in mine}
    items = knowledge_store.items_by_id(conn, [int(key[len(LOG_PREFIX):]) for key in fused])
    notes = knowledge_store.note_names(conn, [n for i in items.values() for n in (i.source_note_id, i.about_note_id)])
    passing = None
    if any(note_filter):
        passing = search_store.notes_passing(conn, sorted(notes), *note_filter)
    hits: list[ItemHit] = []
    for key, value in fused.items():
        item = items.get(int(key[len(LOG_PREFIX):]))
        if item is None:
            continue
        if passing is not None and not ({item.source_note_id, item.about_note_id} & passing):
            continue
        explain = {"knowledge": {"fused": round(value, 6), "status": item.status}}
        for name, entries in ranked.items():
            for rank, (entry, score) in enumerate(entries, start=1):
                if entry == key:
                    explain[name] = {"rank": rank, "bm25" if name == "fts" else "cosine": round(score, 4)}
        shown = next((n for n in (item.source_note_id, item.about_note_id) if n in notes), None)
        hits.append(ItemHit(item, value, explain, shown or "", notes[shown][0] if shown else ""))
    hits.sort(key=lambda h: (-h.score, h.item.item_id))
    return hits[:limit]
