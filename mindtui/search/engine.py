"""Hybrid search: BM25, vector and name-mention lists fused, weighted, expanded, protected, reranked.

Every stage leaves its numbers in each result's `explain`. The search degrades instead of
failing: no vectors, a missing or broken model, a failing reranker or a failing log each
become a notice, and the answer comes from what works.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

import apsw

from mindtui.audience import Audience
from mindtui.config import Settings
from mindtui.errors import InputError
from mindtui.search import fusion
from mindtui.search.knowledge import KINDS, LOG_PREFIX, knowledge_hits
from mindtui.search.memory import UsageMemory, vector_bytes
from mindtui.search.query import ParsedQuery, parse_query
from mindtui.search.query_vector import QueryVector
from mindtui.search.rerank import rerank
from mindtui.search.snippets import highlight_spans, snippet
from mindtui.store import knowledge_store
from mindtui.store import search_store as store
from mindtui.store import vectors as vector_store
from mindtui.store.meta import data_version
from mindtui.store.visibility import audience_of
from mindtui.text import analysis

MODES = ("hybrid", "fts", "vector")
# How much an edge of each provenance lets a note lend in graph expansion (DESIGN.md: explicit 1.0, rule 0.8).
PROVENANCE_WEIGHTS = {"explicit": 1.0, "rule": 0.8}
SCORE_NAMES = {"fts": "bm25", "vector": "cosine", "title": "words"}
MAX_TITLE_WORDS = 6


class TitleKeys(NamedTuple):
    by_words: dict[str, set[str]]  # the name's words joined by spaces -> note ids (for mentions)


@dataclass
class SearchOptions:
    mode: str = "hybrid"
    limit: int = 10
    note_type: str | None = None
    tag: str | None = None
    path: str | None = None
    log: bool = True
    rerank: bool = True  # explicit searches only; automatic context lookups pass False
    expand: bool | None = None  # 1-hop graph expansion; None = the `search.graph_expansion` setting (not in fts mode)
    # False: if the embedding model is not loaded yet, answer from full text now (with a notice)
    # and let it load in the background (a TUI keystroke, an MCP call right after start).
    wait_for_model: bool = True
    kind: str | None = None  # notes | knowledge | None: both (knowledge items are current items only)
    memory: bool | None = None  # usage memory in hybrid searches; None = the `search.memory` setting
    memory_exclude: int | None = None  # a logged search whose opens must not lend (its own replay)

    @property
    def filtered(self) -> bool:
        return bool(self.note_type or self.tag or self.path)


@dataclass
class SearchResult:
    note_id: str
    path: str
    title: str
    score: float
    snippet: str
    chunk_id: int | None
    explain: dict = field(default_factory=dict)
    note_type: str = ""
    # [start, end) character spans of the snippet's words that match a query word's stem: what a front end highlights.
    highlights: list[tuple[int, int]] = field(default_factory=list)
    # "note", or "knowledge": an item (item_id; title = its statement, note_type = its item type, snippet
    # from its body or quote; note_id/path: the note it was stated in, else the one it is about, else "").
    kind: str = "note"
    item_id: int | None = None

    @property
    def log_key(self) -> str:
        """How the result stands in the search log: its note id, or "knowledge:<item_id>"."""
        return f"{LOG_PREFIX}{self.item_id}" if self.kind == "knowledge" else self.note_id

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class SearchResponse:
    mode: str
    notices: list[str] = field(default_factory=list)
    results: list[SearchResult] = field(default_factory=list)
    search_id: int | None = None  # its search log entry, when it was logged

    def as_dict(self) -> dict:
        return {**self.__dict__, "results": [r.as_dict() for r in self.results]}


def _best_per_note(hits: list[store.ChunkHit]) -> list[store.ChunkHit]:
    """Hits are best first; keep each note's first (best) chunk, in order."""
    seen: set[str] = set()
    out = []
    for hit in hits:
        if hit.note_id not in seen:
            seen.add(hit.note_id)
            out.append(hit)
    return out


class SearchModels:
    """The models a search may use, from the process's model holder."""

    def __init__(self, holder, settings: Settings, say: Callable[[str], None] | None = None) -> None:
        self.holder, self.settings, self.say = holder, settings, say

    def embedder(self, wait: bool):
        """The embedder, or None when wait is False and it is still loading."""
        return self.holder.embedder(self.settings, self.say, wait=wait)

    def reranker(self):
        return self.holder.reranker(self.settings)


class SearchEngine:
    """One per connection (it caches title keys per connection). The connection's audience
    (see store.visibility) decides what the engine can see; the engine decides what it logs."""

    embed_early = True  # False: the query is embedded when the vector list asks (tests compare the two)

    def __init__(self, conn: apsw.Connection, settings: Settings, models: SearchModels | None = None) -> None:
        self.conn = conn
        self.settings = settings
        self.options = settings.search
        self.models = models
        self.audience = audience_of(conn)
        vector_store.use_code_index(conn, settings.search)
        self._title_cache: tuple[int, TitleKeys] | None = None
        self._last_lists: dict[str, list[tuple[str, float]]] = {}  # the notes' candidate lists of the last search
        self.memory = UsageMemory(conn, settings)

    # -- retrievers -----------------------------------------------------------------------
    def _pool(self, options: SearchOptions) -> int:
        return max(self.options.candidate_pool, options.limit)  # a long list (browsing on) needs more candidates

    def _query_vector(self, query: str, wait: bool, notices: list[str]) -> QueryVector:
        return QueryVector(self.conn, self.models, self.audience is Audience.OWNER, query, wait, notices)

    def _fts(self, query: ParsedQuery, options: SearchOptions, pool: int) -> list[store.ChunkHit]:
        if query.fts is None:
            return []
        hits = store.fts_chunks(self.conn, query.fts, pool * 4, options.note_type, options.tag, options.path,
                                restricted=self.audience is not Audience.OWNER)
        if not self.options.anchor_text:  # anchor-text rows are the chunkless full-text hits
            hits = [h for h in hits if h.chunk_id is not None]
        return _best_per_note(hits)[:pool]

    def _vector(self, options: SearchOptions, pool: int, query_vector) -> list[store.ChunkHit]:
        found = query_vector()
        if found is None:
            return []
        model_id, vector = found
        # If a filtered pool is not full after the KNN (and hits above min_cosine are left),
        # search only the vectors that pass (knn_refilled).
        wide = options.filtered or self.audience is not Audience.OWNER
        min_cosine = self.options.min_cosine
        found: dict[int, list[store.ChunkHit]] = {}  # per number of hits: their notes' best chunks

        def notes_of(hits: list[vector_store.VectorHit]) -> list[store.ChunkHit]:
            if len(hits) not in found:
                similarities = {h.embedding_id: 1.0 - h.distance for h in hits if 1.0 - h.distance >= min_cosine}
                found[len(hits)] = _best_per_note(store.chunks_for_embeddings(
                    self.conn, similarities, options.note_type, options.tag, options.path))
            return found[len(hits)]

        def enough(hits: list[vector_store.VectorHit]) -> bool:
            return not wide or not hits or 1.0 - hits[-1].distance < min_cosine or len(notes_of(hits)) >= pool

        hits = vector_store.knn_refilled(self.conn, vector, self._vector_k(options, pool, model_id), enough,
                                         store.chunk_vectors_passing(model_id, options.note_type, options.tag,
                                                                     options.path), scanned=query_vector.scanned)
        return notes_of(hits)[:pool]

    def _vector_k(self, options: SearchOptions, pool: int, model_id: str) -> int:
        # Filters (and an agent's hidden notes) drop hits after the KNN: ask for more then.
        # Knowledge items share the vector table: as many more as they have vectors.
        wide = options.filtered or self.audience is not Audience.OWNER
        return pool * (4 if wide else 2) + knowledge_store.item_vector_count(self.conn, model_id)

    # -- the pipeline ---------------------------------------------------------------------
    def search(self, query: str, options: SearchOptions | None = None,
               text_filter: Callable[[str], str] | None = None) -> SearchResponse:
        """Notes and knowledge items (options.kind), best first. text_filter: applied to a chunk's
        (an item's) whole text before its snippet is cut (the service takes links to notes an agent
        may not see out of it)."""
        options = options or SearchOptions()
        if options.mode not in MODES:
            raise ValueError(f"unknown mode {options.mode!r}; use one of {', '.join(MODES)}")
        if options.kind not in KINDS:
            raise ValueError(f"unknown kind {options.kind!r}; use notes or knowledge (or none for both)")
        if isinstance(options.limit, bool) or not isinstance(options.limit, int) or options.limit < 1:
            raise InputError(f"limit must be a whole number of at least 1, not {options.limit!r}")
        response = SearchResponse(options.mode)
        parsed = parse_query(query)  # the one analysis of the text every stage below reads
        query_vector = self._query_vector(query, options.wait_for_model, response.notices)
        self._last_lists = {}
        if self.embed_early and options.kind != "knowledge" and options.mode != "fts" and parsed.words:
            # The notes' vector list will want it (see _notes): embedded while the full text is searched.
            pool = self._pool(options)
            query_vector.start(lambda model_id: vector_store.candidate_scan(
                self.conn, self._vector_k(options, pool, model_id)))
        if options.kind != "knowledge":
            response.results = self._notes(parsed, options, text_filter, response, query_vector)
        if options.kind != "notes":
            items = self._items(parsed, options, text_filter, query_vector)
            response.results = _merged(response.results, items, options.limit)
        if options.log and response.results:
            logged = self._log(query, options.mode, [r.log_key for r in response.results],
                               response.notices, query_vector.value if query_vector.done else None)
            response.search_id = logged if self.audience is Audience.OWNER else None  # row ids count the owner's
        return response

    def count(self, query: str, options: SearchOptions, at_most: int | None = None) -> int:
        """How many notes the query's words match (with the options' filters): the total a list of
        results is a page of. Anchor text counts for the owner only, as it does in the results.
        `at_most`: at_most + 1 means "more than at_most" (store.fts_note_count)."""
        expression = parse_query(query).fts
        if expression is None or options.kind == "knowledge":
            return 0
        anchors = self.options.anchor_text and self.audience is Audience.OWNER
        return store.fts_note_count(self.conn, expression, options.note_type, options.tag, options.path, anchors,
                                    at_most)

    def _items(self, query: ParsedQuery, options: SearchOptions, text_filter, query_vector) -> list[SearchResult]:
        stems = query.stem_set
        out = []
        for hit in knowledge_hits(self.conn, self.settings, query, options.mode, options.limit, query_vector,
                                  (options.note_type, options.tag, options.path), reference=self._last_lists):
            item = hit.item
            text = item.body or item.quote or ""
            if text_filter is not None:
                text = text_filter(text)
            shown = snippet(text, stems)
            title = text_filter(item.title) if text_filter is not None else item.title
            out.append(SearchResult(hit.note_id, hit.path, title, round(hit.score, 6), shown, None, hit.explain,
                                    note_type=item.type, highlights=highlight_spans(shown, stems),
                                    kind="knowledge", item_id=item.item_id))
        return out

    def _notes(self, query: ParsedQuery, options: SearchOptions, text_filter, response: SearchResponse,
               query_vector) -> list[SearchResult]:
        results: list[SearchResult] = []
        pool = self._pool(options)
        lists: dict[str, list[store.ChunkHit]] = {}
        if options.mode in ("fts", "hybrid"):
            lists["fts"] = self._fts(query, options, pool)
        if options.mode in ("vector", "hybrid") and query.words:
            # A query of no words ("???") has no meaning to compare: nothing the vectors return would be it.
            lists["vector"] = self._vector(options, pool, query_vector)
        if options.mode == "hybrid":
            lists["title"] = self._mentions(query, options)

        explain: dict[str, dict] = {}
        best_chunk: dict[str, int] = {}
        for name, hits in lists.items():
            for rank, hit in enumerate(hits, start=1):
                entry = explain.setdefault(hit.note_id, {})
                entry[name] = {"rank": rank, SCORE_NAMES[name]: round(hit.score, 4)}
                if name == "fts" and hit.chunk_id is None:
                    entry[name]["matched"] = "anchor text"  # the lines other notes link to it with
                if hit.chunk_id is not None:
                    best_chunk.setdefault(hit.note_id, hit.chunk_id)
        method = self.options.fusion
        ranked = {name: [(h.note_id, h.score) for h in hits] for name, hits in lists.items()}
        self._last_lists = ranked  # the knowledge items are scored against these (see _items)
        unjudged = self._unembedded(lists, query_vector, explain, response.notices)
        if method == "convex":
            fused = fusion.convex(ranked, self.options.convex_alpha, self.options.convex_normalisation, unjudged,
                                  pool)
        else:
            fused = fusion.rrf(ranked, self.options.rrf_k, dataclasses.asdict(self.options.rrf_weights), unjudged)
        fused = self._remember(query, options, fused, explain, query_vector)

        weights = store.retriever_weights(self.conn, list(fused))
        scores: dict[str, float] = {}
        for note_id, value in fused.items():
            weight = weights.get(note_id, 1.0)
            scores[note_id] = value * weight
            explain[note_id].update({"fusion": method, "fused": round(value, 6), "retriever_weight": weight,
                                     "weighted": round(value * weight, 6)})
        # `fts` means the notes holding the words (what the TUI lists as you type): a linked
        # note holding none of them is no full-text hit, unless asked for with expand=True.
        expand = (self.options.graph_expansion and options.mode != "fts") if options.expand is None else options.expand
        lent = self._expand(scores, options) if expand else {}

        # An exact title or alias match goes first, whatever the fusion said.
        protected = self._exact_matches(query, options)
        ranked_rest = sorted((n for n in scores if n not in protected), key=lambda n: (-scores[n], n))
        head_size = max(options.limit, self.options.rerank_top if options.rerank else 0)
        # Facts (path, title) only for what can be shown or reranked; a few spare for notes deleted
        # since the title cache was read.
        head = list(protected) + ranked_rest[:head_size + 8]
        facts = store.note_facts(self.conn, head)
        present = [n for n in protected if n in facts]
        top = max(scores.values(), default=0.0)
        for position, note_id in enumerate(present):
            explain.setdefault(note_id, {})["protected"] = "exact title/alias match"
            scores[note_id] = round(top + 0.001 * (len(present) - position), 6)
        rest = [n for n in ranked_rest[:head_size + 8] if n in facts]
        missing = [n for n in present + rest[:head_size] if n not in best_chunk]  # reached by expansion or names
        best_chunk.update(store.first_chunks(self.conn, missing))
        for note_id in present + rest:  # explained only for what can be shown: expansion may touch thousands
            if note_id in lent:
                ranked_lenders = sorted(lent[note_id], reverse=True)
                explain.setdefault(note_id, {})["graph"] = {
                    "gain": round(ranked_lenders[0][0], 6), "from": [source for _, source in ranked_lenders[:3]]}
        reranked = (rerank(self.conn, self.models, self.options.rerank_top, query.text, rest, best_chunk, facts,
                           explain, response.notices) if options.rerank else rest)
        order = present + reranked  # the reranker orders the rest: exact title matches stay first
        texts = store.chunk_texts(self.conn, [c for c in (best_chunk.get(n) for n in order[:options.limit]) if c])
        stems = query.stem_set
        for note_id in order[:options.limit]:
            fact = facts[note_id]
            chunk_id = best_chunk.get(note_id)
            text = texts.get(chunk_id, ("", ""))[1] if chunk_id else ""
            if text_filter is not None:
                text = text_filter(text)
            shown = snippet(text, stems)
            results.append(SearchResult(note_id, fact.path, fact.title, round(scores[note_id], 6),
                                        shown, chunk_id, explain.get(note_id, {}), note_type=fact.type,
                                        highlights=highlight_spans(shown, stems)))
        return results

    def _unembedded(self, lists: dict, query_vector, explain: dict, notices: list[str]) -> frozenset[str]:
        """The full-text hits without a vector of the model, when others have one (fusion.py: their words
        stand in for it); the owner is told of those an embedding run would give one."""
        if not (lists.get("fts") and lists.get("vector") and query_vector.done and query_vector.value):
            return frozenset()
        found = vector_store.notes_without_vectors(self.conn, [h.note_id for h in lists["fts"]], query_vector.value[0])
        for note_id in found:
            explain[note_id]["not_embedded"] = True
        if (pending := sum(found.values())) and self.audience is Audience.OWNER:
            notices.append(f"{pending} of the notes found by their words have no vector yet (run `mindtui embed`); "
                           "their words stand in for their meaning")
        return frozenset(found)

    def _remember(self, query: ParsedQuery, options: SearchOptions, fused: dict[str, float], explain: dict,
                  query_vector) -> dict[str, float]:
        """Usage memory (hybrid only): for an agent only with privacy.agent_uses_history, past queries untold."""
        owner = self.audience is Audience.OWNER
        wanted = self.options.memory if options.memory is None else options.memory
        if (not wanted or options.mode != "hybrid" or not query.words
                or not (owner or self.settings.privacy.agent_uses_history)):
            return fused  # (a query of no words means nothing to compare with earlier ones)
        return self.memory.fuse(query, query_vector(), fused, explain, lambda ids: self._passing(ids, options),
                                with_queries=owner, exclude_search=options.memory_exclude)

    def _expand(self, scores: dict[str, float], options: SearchOptions) -> dict[str, list[tuple[float, str]]]:
        """1-hop graph expansion: the top notes lend part of their score to the notes they link with.

        A neighbour gains factor x provenance weight x its strongest lender's score
        (explicit edges weigh 1.0, type-default rules 0.8, change-graph edges their confidence);
        notes outside the filters are not added. Returns each gaining note's (gain, lender) pairs.
        """
        lenders = sorted(scores, key=lambda n: (-scores[n], n))[:self.options.graph_expansion_top]
        factor = self.options.graph_expansion_factor
        strength: dict[tuple[str, str], float] = {}
        for source, target, provenance, confidence in store.expansion_edges(self.conn, lenders):
            # A signal edge (edited together) weighs what its evidence is worth: 1 - 0.5^sessions.
            weight = confidence if provenance == "signal" else PROVENANCE_WEIGHTS.get(provenance, 0.0)
            if weight > strength.get((source, target), 0.0):
                strength[(source, target)] = weight
        allowed = self._passing(sorted({t for _, t in strength}), options) if options.filtered else None
        lent: dict[str, list[tuple[float, str]]] = {}
        best: dict[str, float] = {}
        for (source, target), weight in strength.items():
            if allowed is not None and target not in allowed:
                continue
            value = scores[source] * factor * weight
            lent.setdefault(target, []).append((value, source))
            if value > best.get(target, 0.0):
                best[target] = value
        # The strongest lender counts, not the sum: a hub note linked from every top result
        # would otherwise overtake them all.
        for target, gain in best.items():
            scores[target] = scores.get(target, 0.0) + gain
        return lent

    def _mentions(self, query: ParsedQuery, options: SearchOptions) -> list[store.ChunkHit]:
        """Notes whose title or alias the query names inside longer text, longest names first.

        "luhmann zettelkasten ablage" names two notes. One-word names need 5+ letters and must not
        be a stop word; a name shared by more than 3 notes says too little to count.
        """
        words = query.words
        if len(words) < 2:
            return []  # a one-word query is the exact-match case
        names = self._title_keys().by_words
        found: dict[str, tuple[int, int]] = {}
        for start in range(len(words)):
            for length in range(min(MAX_TITLE_WORDS, len(words) - start), 0, -1):
                key = " ".join(words[start:start + length])
                if length == 1 and (len(key) < 5 or analysis.is_stop_word(key)):
                    continue
                ids = names.get(key, ())
                if 0 < len(ids) <= 3:
                    for note_id in ids:
                        found.setdefault(note_id, (length, start))
        if found and options.filtered:
            passing = self._passing(sorted(found), options)
            found = {n: v for n, v in found.items() if n in passing}
        ordered = sorted(found, key=lambda n: (-found[n][0], found[n][1], n))
        return [store.ChunkHit(None, n, float(found[n][0])) for n in ordered]

    def _passing(self, note_ids: list[str], options: SearchOptions) -> set[str]:
        return store.notes_passing(self.conn, note_ids, options.note_type, options.tag, options.path)

    def _exact_matches(self, query: ParsedQuery, options: SearchOptions) -> list[str]:
        key = query.exact
        if not key:
            return []
        # An index lookup (note_names), not the title cache: the first full-text search of a
        # session waited ~100 ms for every title and alias to be read into it.
        matches = store.exact_name_matches(self.conn, key)
        if matches and options.filtered:
            passing = self._passing(matches, options)
            matches = [n for n in matches if n in passing]
        return matches

    def _title_keys(self) -> TitleKeys:
        """Every title and alias -> note ids by its words (for mentions); rebuilt only when the database changed.

        `PRAGMA data_version` moves when another connection commits (an import, an edit), so a
        long-lived engine (TUI, MCP server) reads all titles once, not on every keystroke.
        """
        version = data_version(self.conn)
        if self._title_cache is None or self._title_cache[0] != version:
            by_words: dict[str, set[str]] = {}
            for note_id, title, aliases in store.title_matches(self.conn):
                for name in [title, *aliases]:
                    name_words = analysis.words(name)
                    if 0 < len(name_words) <= MAX_TITLE_WORDS:
                        by_words.setdefault(" ".join(name_words), set()).add(note_id)
            self._title_cache = (version, TitleKeys(by_words))
        return self._title_cache[1]

    def record(self, query: str, mode: str, note_ids: list[str]) -> list[str]:
        """Log a search whose results were shown without logging (a front end that searches as
        the user types logs only the query the user acted on). Returns notices."""
        return self.log_entry(query, mode, note_ids)[1]

    def log_entry(self, query: str, mode: str, note_ids: list[str]) -> tuple[int | None, list[str]]:
        """record(), returning the log entry's id too (None: not logged) and the notices."""
        notices: list[str] = []
        # The search just ran: its vector is in the embedder's cache (never wait for a model here).
        found = self._query_vector(query, False, [])() if mode != "fts" else None
        return self._log(query, mode, note_ids, notices, found), notices

    def _log(self, query: str, mode: str, note_ids: list[str], notices: list[str], vector) -> int | None:
        """The owner's searches teach search pairs and keep their (model id, query vector) for usage
        memory; an agent's are kept apart (or not at all with privacy.log_agent_queries: false) and
        teach nothing. Returns the log entry's id (None: not logged)."""
        owner = self.audience is Audience.OWNER
        if not owner and not self.settings.privacy.log_agent_queries:
            return None
        blob, model = (vector_bytes(vector[1]), vector[0]) if owner and vector is not None else (None, None)
        try:
            return store.log_search(self.conn, query, mode, note_ids[:self.options.log_top], self.audience.value,
                                    learn_pairs=owner, vector=blob, vector_model=model)
        except apsw.Error as exc:  # the search graph is a by-product: never fail the search for it
            notices.append(f"search not logged ({exc})")
            return None


def _merged(notes: list[SearchResult], items: list[SearchResult], limit: int) -> list[SearchResult]:
    """Both lists in their own order (the notes' may be the reranker's), interleaved by score;
    exact title matches of notes stay first."""
    out = [r for r in notes if "protected" in r.explain]
    rest = [r for r in notes if "protected" not in r.explain]
    i = j = 0
    while len(out) < limit and (i < len(rest) or j < len(items)):
        if j >= len(items) or (i < len(rest) and rest[i].score >= items[j].score):
            out.append(rest[i])
            i += 1
        else:
            out.append(items[j])
            j += 1
    return out[:limit]


def make_search_engine(conn: apsw.Connection, settings: Settings, say: Callable[[str], None] | None = None,
                       holder=None) -> SearchEngine:
    """The engine with the configured models from the process's holder (loaded lazily, once)."""
    from mindtui.models.holder import shared_holder

    return SearchEngine(conn, settings, SearchModels(holder or shared_holder(), settings, say))
