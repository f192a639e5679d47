"""Run queries through the search engine under several system settings and score them."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping

from mindtui.evaluation.metrics import METRICS, first_relevant_rank, score_runs
from mindtui.search.engine import SearchEngine, SearchOptions
from mindtui.vault.markdown import split_frontmatter

# The systems compared. Searches are never logged (evaluation must not grow the search graph).
BASE_SYSTEMS: dict[str, dict] = {
    "fts": {"mode": "fts", "rerank": False, "expand": False},
    "vector": {"mode": "vector", "rerank": False, "expand": False},
    "hybrid": {"mode": "hybrid", "rerank": False, "expand": False},
    "hybrid+graph": {"mode": "hybrid", "rerank": False, "expand": True},
    "hybrid+rerank": {"mode": "hybrid", "rerank": True, "expand": False},
}

QueryProgress = Callable[[int, int, str], None]


@dataclass
class SystemRun:
    name: str
    rankings: dict[str, list[str]] = field(default_factory=dict)  # query id -> ranked note paths
    notices: set[str] = field(default_factory=set)


def run_system(engine: SearchEngine, name: str, queries: Mapping[str, str], limit: int,
               exclude: Mapping[str, str] | None = None, progress: QueryProgress | None = None) -> SystemRun:
    """Each query's ranked note paths. `exclude` maps a query id to a path left out (its own note)."""
    run = SystemRun(name)
    options = SearchOptions(limit=limit + (1 if exclude else 0), log=False, **BASE_SYSTEMS[name])
    for done, (query_id, text) in enumerate(queries.items(), start=1):
        response = engine.search(text, options)
        run.notices.update(response.notices)
        own = exclude.get(query_id) if exclude else None
        run.rankings[query_id] = [r.path for r in response.results if r.path != own][:limit]
        if progress:
            progress(done, len(queries), name)
    return run


def evaluate(engine: SearchEngine, systems: Iterable[str], queries: Mapping[str, str],
             qrels: Mapping[str, Mapping[str, float]], metrics: list[str], limit: int,
             exclude: Mapping[str, str] | None = None, progress: QueryProgress | None = None,
             categories: Mapping[str, str] | None = None) -> dict:
    """{"systems": {name: {metric: value}}, "categories": {category: {name: {...}}},
    "per_query": {name: {query id: row}}, "notices": [...]}. A per-query row holds the first
    metric's value, the rank of the first relevant result (0: none in the list) and the top 3 paths:
    what `mindtui eval --compare` lines up between two runs."""
    result: dict = {"systems": {}, "categories": {}, "per_query": {}, "notices": []}
    notices: set[str] = set()
    for name in systems:
        run = run_system(engine, name, queries, limit, exclude, progress)
        notices.update(f"{name}: {n}" for n in run.notices)
        result["systems"][name] = score_runs(run.rankings, qrels, metrics)
        result["per_query"][name] = {q: _query_row(run.rankings.get(q, []), qrels[q], metrics[0], queries.get(q, ""),
                                                   (categories or {}).get(q)) for q in qrels}
        for category in sorted(set((categories or {}).values())):
            subset = {q: j for q, j in qrels.items() if categories[q] == category}
            result["categories"].setdefault(category, {})[name] = score_runs(run.rankings, subset, metrics)
    result["notices"] = sorted(notices)
    return result


def _query_row(ranked: list[str], judgments: Mapping[str, float], metric: str, text: str,
               category: str | None) -> dict:
    row = {"query": text[:120], metric: round(METRICS[metric](ranked, judgments), 4),
           "rank": first_relevant_rank(ranked, judgments), "top": ranked[:3]}
    if category is not None:
        row["category"] = category
    return row


# -- the linked-pair test -------------------------------------------------------------------------
def first_words(path: Path, count: int = 200) -> str:
    """A note's first `count` words after its frontmatter, as the linked-pair test's query."""
    body = split_frontmatter(path.read_text(encoding="utf-8", errors="replace"))[1]
    return " ".join(body.split()[:count])


def linked_pair_queries(vault: Path, links: Mapping[str, set[str]], sample: int | None = None,
                        seed: int = 13) -> tuple[dict[str, str], dict[str, dict[str, float]], dict[str, str]]:
    """(queries, qrels, exclude) keyed by the note's path: every note with resolved out-links."""
    sources = sorted(p for p, targets in links.items() if targets)
    if sample and sample < len(sources):
        sources = sorted(random.Random(seed).sample(sources, sample))
    queries, qrels, exclude = {}, {}, {}
    for path in sources:
        text = first_words(vault / path)
        if text:
            queries[path] = text
            qrels[path] = {target: 1.0 for target in links[path]}
            exclude[path] = path
    return queries, qrels, exclude
