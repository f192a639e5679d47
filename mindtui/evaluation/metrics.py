"""Ranking metrics over a ranked list of ids and graded judgments (id -> gain).

Gains follow the golden-set convention: 1.0 relevant, 0.5 partial. nDCG uses the gains;
MRR, Hit@k and Recall@k count only fully relevant ids (gain >= 1), so a partial answer in
first place is not a hit.
"""

from __future__ import annotations

import math
from statistics import fmean
from typing import Iterable, Mapping, Sequence

RELEVANT = 1.0


def _dcg(gains: Iterable[float]) -> float:
    return sum(gain / math.log2(position + 2) for position, gain in enumerate(gains))


def ndcg_at(ranked: Sequence[str], judgments: Mapping[str, float], k: int) -> float:
    ideal = _dcg(sorted(judgments.values(), reverse=True)[:k])
    if ideal <= 0:
        return 0.0
    return _dcg(judgments.get(doc, 0.0) for doc in ranked[:k]) / ideal


def _relevant(judgments: Mapping[str, float]) -> set[str]:
    return {doc for doc, gain in judgments.items() if gain >= RELEVANT}


def mrr_at(ranked: Sequence[str], judgments: Mapping[str, float], k: int | None = None) -> float:
    relevant = _relevant(judgments)
    for position, doc in enumerate(ranked[:k] if k else ranked, start=1):
        if doc in relevant:
            return 1.0 / position
    return 0.0


def first_relevant_rank(ranked: Sequence[str], judgments: Mapping[str, float]) -> int:
    """1-based rank of the first fully relevant id; 0 when none is in the list."""
    relevant = _relevant(judgments)
    return next((position for position, doc in enumerate(ranked, start=1) if doc in relevant), 0)


def hit_at(ranked: Sequence[str], judgments: Mapping[str, float], k: int) -> float:
    return 1.0 if _relevant(judgments) & set(ranked[:k]) else 0.0


def recall_at(ranked: Sequence[str], judgments: Mapping[str, float], k: int) -> float:
    relevant = _relevant(judgments)
    if not relevant:
        return 0.0
    return len(relevant & set(ranked[:k])) / len(relevant)


METRICS = {
    "ndcg@5": lambda r, j: ndcg_at(r, j, 5),
    "ndcg@10": lambda r, j: ndcg_at(r, j, 10),
    "mrr": lambda r, j: mrr_at(r, j),
    "mrr@10": lambda r, j: mrr_at(r, j, 10),
    "hit@1": lambda r, j: hit_at(r, j, 1),
    "hit@3": lambda r, j: hit_at(r, j, 3),
    "hit@5": lambda r, j: hit_at(r, j, 5),
    "hit@10": lambda r, j: hit_at(r, j, 10),
    "recall@10": lambda r, j: recall_at(r, j, 10),
    "recall@100": lambda r, j: recall_at(r, j, 100),
}


def score_runs(runs: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, float]],
               names: Sequence[str]) -> dict[str, float]:
    """Mean of each named metric over the judged queries (a query with no ranking scores 0)."""
    judged = [q for q in qrels if _relevant(qrels[q])]
    return {name: round(fmean(METRICS[name](runs.get(q, []), qrels[q]) for q in judged), 4) if judged else 0.0
            for name in names}
