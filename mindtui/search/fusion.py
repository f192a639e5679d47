"""How the full-text and vector lists become one score per note.

rrf:    sum over lists of weight / (k + rank): ranks only, robust to score scales.
convex: (1 - alpha) * fts + alpha * vector over normalised scores (BM25 negated first: lower is
        better there); a note missing from a list gets that list's minimum, i.e. 0.
        It keeps how far apart candidates are, which ranks throw away. Normalisation:
        zscore-pool (default): zscore, a full-text list with fewer notes than the candidate pool
                 measured with the rest of the pool at BM25 0 (what a note without the words
                 scores). Among its own hits alone, a word's only note got 1.0 (a spread of
                 one), two got 2.0 and 0 however far apart, while the vector list's best stood
                 2-4 deviations out: "Tantivy", in one note of the sample vault, put it 10th
                 below nine notes without the word. A full list is measured as under zscore.
        zscore:  (score - pool minimum) / standard deviation of the pool: each list
                 counts by how far a note stands out from the rest of its candidates.
        minmax:  (score - minimum) / (maximum - minimum): hinges on the single best and worst
                 candidate, so one outlier flattens everything else in its list.
        Name mentions add 0.5 x (words in the name / words in the longest name mentioned) x the
        main lists' top normalised score (1.0 under minmax).
Both: a note the vector list cannot judge (`unjudged`: no vector yet, or never) has its full-text
score stand in for its vector score (convex: its normalised score; rrf: its rank). Counted as 0
there, a note imported a minute ago, the only one with the query's rare word, came 48th of 61.
"""

from __future__ import annotations

from typing import AbstractSet as Set, Mapping, Sequence

# A list is the retriever's best-first (note_id, raw score) pairs.
Ranked = Sequence[tuple[str, float]]
LOWER_IS_BETTER = {"fts"}
SCALED_BY_MAX = {"title"}  # name mentions: words in the name, scaled by the longest (not normalised)
SHARE_OF_EXTRA_LISTS = 0.5  # a list beside fts and vector (name mentions) adds up to this share of a top score
NORMALISATIONS = ("zscore", "minmax", "zscore-pool")


def rrf(lists: Mapping[str, Ranked], k: float, weights: Mapping[str, float],
        unjudged: Set[str] = frozenset()) -> dict[str, float]:
    fused: dict[str, float] = {}
    for name, hits in lists.items():
        weight = float(weights[name])
        for rank, (note_id, _score) in enumerate(hits, start=1):
            fused[note_id] = fused.get(note_id, 0.0) + weight / (k + rank)
    if lists.get("vector"):
        for rank, (note_id, _score) in enumerate(lists.get("fts", ()), start=1):
            if note_id in unjudged:
                fused[note_id] += float(weights["vector"]) / (k + rank)
    return fused


def normalised(name: str, hits: Ranked, method: str = "zscore", unmatched: int = 0) -> dict[str, float]:
    """Scores of one list on a common scale, never negative; the worst candidate gets 0.
    unmatched: candidates of the pool a full-text list does not fill (BM25 0), counted with its own
    under zscore-pool."""
    if not hits:
        return {}
    if name in SCALED_BY_MAX:  # every mention counts; the longest name counts most
        top = max(s for _, s in hits)
        return {note_id: s / top for note_id, s in hits}
    if method not in NORMALISATIONS:
        raise ValueError(f"unknown normalisation {method!r} (expected one of {', '.join(NORMALISATIONS)})")
    values = [(-s if name in LOWER_IS_BETTER else s) for _, s in hits]
    pad = unmatched if method == "zscore-pool" and name in LOWER_IS_BETTER else 0
    low = min(values + [0.0] * bool(pad))
    if method == "minmax":
        spread = max(values) - low
    else:
        count = len(values) + pad
        mean = sum(values) / count
        spread = ((sum((v - mean) ** 2 for v in values) + pad * mean ** 2) / count) ** 0.5
    return {note_id: (value - low) / spread if spread > 0 else 1.0
            for (note_id, _), value in zip(hits, values)}


def convex(lists: Mapping[str, Ranked], alpha: float, method: str = "zscore",
           unjudged: Set[str] = frozenset(), pool: int = 0) -> dict[str, float]:
    """alpha is the vector list's share; with one list present its normalised scores are used as they
    are. pool: the candidates each list was asked for (zscore-pool: a full-text list's empty places
    among them, at most as many as the lists found in all, count at BM25 0)."""
    # The places a list left empty, among candidates the others found (a tiny corpus has fewer).
    reach = min(pool, len({note_id for hits in lists.values() for note_id, _ in hits}))
    present = {name: normalised(name, hits, method, max(0, reach - len(hits))) for name, hits in lists.items() if hits}
    if len(present) == 1:
        return dict(next(iter(present.values())))
    share = {"vector": alpha, "fts": 1.0 - alpha}
    # Extra lists are measured in the (share-weighted) top normalised score of the main lists
    # present: 1.0 under minmax, so a full name mention counts like being first in one list.
    tops = {name: max(scores.values()) for name, scores in present.items() if name in share}
    total_share = sum(share[name] for name in tops)
    if total_share > 0:
        unit = sum(share[name] * top for name, top in tops.items()) / total_share
    else:  # alpha 0 or 1 and only the list without a share came back
        unit = max(tops.values(), default=1.0)
    fused: dict[str, float] = {}
    for name, scores in present.items():
        weight = share[name] if name in share else SHARE_OF_EXTRA_LISTS * unit
        for note_id, value in scores.items():
            fused[note_id] = fused.get(note_id, 0.0) + weight * value
    if "vector" in present:
        for note_id, value in present.get("fts", {}).items():
            if note_id in unjudged:
                fused[note_id] += share["vector"] * value
    return fused
