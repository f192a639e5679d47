"""Usage memory: what the owner opened after earlier searches that mean the same lends score.

One more list in the fusion (README "Usage memory"). For the current query each earlier owner
search with opens gets a similarity in [0, 1]:

- typed again: the Jaccard share of non-stop-word stems; from `search.memory_min_shared_words`
  it is the similarity itself (the same query typed again scores 1);
- otherwise the evidence that it was the same need, each part measured on help-de's repeat
  queries (DESIGN.md "Search"):
  * the same corner of the vault: the rank-weighted overlap (sum of 1/sqrt(rank here x rank
    there), over the most that can be shared) of its logged top results and this query's top
    `search.memory_overlap_top` fused candidates before memory;
  * plus `search.memory_vector_share` x how far its query vector's cosine stands above the
    other past queries' (in standard deviations: e5 query vectors all lie 0.85-0.88 apart, so a
    raw cosine says little, a margin over the crowd a bit more);
  * minus `search.memory_rank_penalty` x the place of the note it opened among this query's
    candidates (`memory_overlap_top` + 1 when absent): a note this query finds anyway is a safer
    loan than one from nowhere;
  evidence below `search.memory_min_evidence` lends nothing, and it reaches 1 at
  `memory_min_evidence + memory_evidence_span`.

An agent's search (privacy.agent_uses_history) is compared by the first and the last of these
alone, what the past search found and what it opened: a past query's words or vector must not
decide whether it lends, or typing guesses and watching what is lifted would spell it out.

A note's score is the noisy-or of (similarity x half-life decay since the open) over its opens:
more opens after similar searches count more, never past 1; the fusion adds
`search.memory_weight` x that x the top fused score.
"""

from __future__ import annotations

import datetime
import math
from dataclasses import dataclass
from typing import Callable

from mindtui.lazy_import import lazy_module
from mindtui.search.query import ParsedQuery, parse_query
from mindtui.store import usage_store
from mindtui.store.meta import data_version

np = lazy_module("numpy")  # a full-text search never imports it (see lazy_import)


MIN_SPREAD = 5  # past query vectors needed before their cosines' spread means anything
MAX_WORDS = 64  # words of a query compared (a pasted paragraph is not a query to remember by its words)
SHOWN_CHARS = 80  # of a past query in an explanation (a pasted page made every explain panel a page long)


def _stems(query: ParsedQuery) -> frozenset[str]:
    """The stems of the query's first MAX_WORDS search terms (stop words dropped, as the search drops them)."""
    return frozenset().union(*query.stems[:MAX_WORDS])


@dataclass(frozen=True)
class Lent:
    """What the memory lends one note: a score in [0, 1) and what to tell about it."""

    score: float
    query: str  # the most similar earlier query that opened the note
    times: int  # opens of the note after searches similar enough to lend
    last_opened: str  # ISO time of the latest of them


@dataclass(frozen=True)
class _Past:
    search: usage_store.PastSearch
    stems: frozenset[str]
    vector: np.ndarray | None
    top: tuple[str, ...]  # its logged results the reader can see, best first


class UsageMemory:
    """Per connection: the owner's past searches with opens, read again only when opens change."""

    def __init__(self, conn, settings) -> None:
        self.conn, self.settings = conn, settings
        self._cache: tuple[tuple, list[_Past]] | None = None

    def _past(self, model_id: str | None) -> list[_Past]:
        # Another connection's commit (an import that deleted a note) moves data_version; this
        # one's own writes move total_changes (after `usage forget` ids start again: the same
        # usage_stamp can stand for other opens).
        stamp = (usage_store.usage_stamp(self.conn), data_version(self.conn), self.conn.total_changes(), model_id)
        if self._cache is None or self._cache[0] != stamp:
            top = self.settings.search.memory_overlap_top
            searches = usage_store.past_searches(self.conn, model_id)
            # Its results as this reader would have been shown them: a note hidden from it (or
            # deleted since) neither overlaps nor pushes the notes after it a place down.
            readable = usage_store.readable_notes(self.conn, {n for s in searches for n in s.results})
            past = [_Past(s, _stems(parse_query(s.query)),
                          np.frombuffer(s.vector, dtype=np.float32) if s.vector else None,
                          tuple([n for n in s.results if n in readable][:top]))
                    for s in searches]
            self._cache = (stamp, past)
        return self._cache[1]

    def fuse(self, query: ParsedQuery, query_vector, fused: dict[str, float], explain: dict,
             passing: Callable[[list[str]], set[str]], with_queries: bool = True,
             exclude_search: int | None = None) -> dict[str, float]:
        """The fused scores with what the memory lends added: a note gains up to
        search.memory_weight x the top fused score (bounded: an exact title match still goes first),
        explained in explain[note]["memory"] (the past query only `with_queries`)."""
        current = sorted(fused, key=lambda n: (-fused[n], n))
        lent = self.lend(query, query_vector, current, passing, exclude_search, by_text=with_queries)
        top = max(fused.values(), default=1.0) or 1.0
        weight = self.settings.search.memory_weight
        out = dict(fused)
        for rank, note_id in enumerate(sorted(lent, key=lambda n: (-lent[n].score, n)), start=1):
            gain = weight * top * lent[note_id].score
            out[note_id] = out.get(note_id, 0.0) + gain
            explain.setdefault(note_id, {})["memory"] = {
                "rank": rank, "lent": round(gain, 6), "why": explanation(lent[note_id], with_query=with_queries)}
        return out

    def lend(self, query: ParsedQuery, query_vector, current: list[str], passing: Callable[[list[str]], set[str]],
             exclude_search: int | None = None, now: datetime.datetime | None = None,
             by_text: bool = True) -> dict[str, Lent]:
        """note_id -> Lent for the notes earlier similar searches opened. query_vector: (model id,
        vector) or None; current: the note ids of this query's fused ranking before memory, best
        first; passing: which of some note ids pass the search's filters. by_text False (an
        agent's search): a past search is judged by what it found and opened alone, never by its
        words or query vector; otherwise a query typed to see whether it is lent to would tell
        the agent what the owner once searched for."""
        model_id, vector = query_vector if query_vector is not None else (None, None)
        past = [p for p in self._past(model_id) if p.search.search_id != exclude_search]
        if not past:
            return {}
        options = self.settings.search
        similarities = _similarities(query, vector if by_text else None, current[:options.memory_overlap_top], past,
                                     options, by_text)
        now = now or datetime.datetime.now(datetime.timezone.utc)
        half_life = options.memory_half_life_days
        keep: dict[str, float] = {}  # note -> product of (1 - lent) so far
        best: dict[str, tuple[float, str]] = {}
        times: dict[str, int] = {}
        last: dict[str, str] = {}
        for item, similarity in zip(past, similarities):
            if similarity <= 0.0:
                continue
            for note_id, opened_at in item.search.opens:
                age_days = max(0.0, (now - _parse(opened_at)).total_seconds() / 86400)
                lent = similarity * 0.5 ** (age_days / half_life)
                keep[note_id] = keep.get(note_id, 1.0) * (1.0 - lent)
                times[note_id] = times.get(note_id, 0) + 1
                last[note_id] = max(last.get(note_id, ""), opened_at)
                if similarity > best.get(note_id, (-1.0, ""))[0]:
                    best[note_id] = (similarity, item.search.query)
        allowed = passing(sorted(keep))
        return {n: Lent(round(1.0 - k, 6), best[n][1], times[n], last[n])
                for n, k in keep.items() if n in allowed and k < 1.0}


def _similarities(query: ParsedQuery, vector, current: list[str], past: list[_Past], options,
                  by_text: bool = True) -> list[float]:
    """Each past search's similarity to this one in [0, 1] (the module docstring says how;
    by_text False: without the shared words, and called without a vector)."""
    stems = _stems(query) if by_text else frozenset()
    top = options.memory_overlap_top
    place = {note_id: rank for rank, note_id in enumerate(current[:top], start=1)}
    spread = sum(1.0 / rank for rank in range(1, top + 1))
    standing = _standing(vector, past)
    out = []
    for item, stands in zip(past, standing):
        shared = sum(1.0 / math.sqrt(place[n] * rank) for rank, n in enumerate(item.top, start=1) if n in place)
        opened = min((place.get(n, top + 1) for n, _ in item.search.opens), default=top + 1)
        evidence = shared / spread + options.memory_vector_share * stands - options.memory_rank_penalty * opened
        lent = min(1.0, max(0.0, (evidence - options.memory_min_evidence) / options.memory_evidence_span))
        words = len(stems & item.stems) / len(stems | item.stems) if by_text and stems | item.stems else 0.0
        out.append(max(lent, words if words >= options.memory_min_shared_words else 0.0))
    return out


def _standing(vector, past: list[_Past]) -> list[float]:
    """How many standard deviations each past query's cosine to this one stands above the mean of
    them all (0 without vectors, or with fewer than MIN_SPREAD of them: no spread to measure)."""
    cosines = [float(np.dot(vector, p.vector)) if vector is not None and p.vector is not None
               and p.vector.shape == np.shape(vector) else None for p in past]
    known = [c for c in cosines if c is not None]
    if len(known) < MIN_SPREAD:
        return [0.0] * len(past)
    mean = sum(known) / len(known)
    deviation = (sum((c - mean) ** 2 for c in known) / len(known)) ** 0.5 or 1.0
    return [(c - mean) / deviation if c is not None else 0.0 for c in cosines]


def vector_bytes(vector) -> bytes:
    """How a query vector is kept in the search log (float32, as the vector table keeps them)."""
    return np.asarray(vector, dtype=np.float32).tobytes()


def _parse(stamp: str) -> datetime.datetime:
    moment = datetime.datetime.fromisoformat(stamp)
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.timezone.utc)


def explanation(lent: Lent, now: datetime.datetime | None = None, with_query: bool = True) -> str:
    """"opened after a similar search: '…' (3×, 5 days ago)"; without the query for an agent."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    days = math.floor(max(0.0, (now - _parse(lent.last_opened)).total_seconds()) / 86400)
    ago = "today" if days == 0 else "1 day ago" if days == 1 else f"{days} days ago"
    said = f": '{_clipped(lent.query)}'" if with_query else ""
    return f"opened after a similar search{said} ({lent.times}×, {ago})"


def _clipped(query: str) -> str:
    query = " ".join(query.split())
    return query if len(query) <= SHOWN_CHARS else query[:SHOWN_CHARS - 1].rstrip() + "…"
