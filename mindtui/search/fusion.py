"""How the full-text and vector lists become one score per note.

rrf:    sum over lists of weight / (k + rank): ranks only, robust to score scales.
convex: (1 - alpha) * fts + alpha * vector, each list's scores min-max normalised to [0, 1]
        (BM25 negated first: lower is better there); a note missing from a list gets 0 for it.
        It keeps how far apart candidates are, which ranks throw away. Name mentions add
        0.5 x (words in the name / words in the longest name mentioned).
"""

from __future__ import annotations

from typing import Mapping, Sequence

# A list is the retriever's best-first (note_id, raw score) pairs.
Ranked = Sequence[tuple[str, float]]
LOWER_IS_BETTER = {"fts"}
SCALED_BY_MAX = {"title"}  # name mentions: words in the name, scaled by the longest (not min-max)
SHARE_OF_EXTRA_LISTS = 0.5  # a list beside fts and vector (name mentions) adds up to this much


def rrf(lists: Mapping[str, Ranked], k: float, weights: Mapping[str, float]) -> dict[str, float]:
    fused: dict[str, float] = {}
    for name, hits in lists.items():
        weight = float(weights.get(name, 1.0))
        for rank, (note_id, _score) in enumerate(hits, start=1):
            fused[note_id] = fused.get(note_id, 0.0) + weight / (k + rank)
    return fused


def normalised(name: str, hits: Ranked) -> dict[str, float]:
    if not hits:
        return {}
    if name in SCALED_BY_MAX:  # every mention counts; the longest name counts most
        top = max(s for _, s in hits)
        return {note_id: s / top for note_id, s in hits}
    values = [(-s if name in LOWER_IS_BETTER else s) for _, s in hits]
    low, high = min(values), max(values)
    return {note_id: (value - low) / (high - low) if high > low else 1.0
            for (note_id, _), value in zip(hits, values)}


def convex(lists: Mapping[str, Ranked], alpha: float) -> dict[str, float]:
    """alpha is the vector list's share; with one list present its normalised scores are used as they are."""
    present = {name: normalised(name, hits) for name, hits in lists.items() if hits}
    if len(present) == 1:
        return dict(next(iter(present.values())))
    share = {"vector": alpha, "fts": 1.0 - alpha}
    fused: dict[str, float] = {}
    for name, scores in present.items():
        for note_id, value in scores.items():
            fused[note_id] = fused.get(note_id, 0.0) + share.get(name, SHARE_OF_EXTRA_LISTS) * value
    return fused
