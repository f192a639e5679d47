"""Usage-memory designs replayed over the repeat-need protocol's rankings, on many splits at once.

    .venv/bin/python bench/repeat_replay.py GOLDEN REPEAT --db SCRATCH [--seeds 22,7,5,11,3,9]

SCRATCH is the index `mindtui eval repeat ... --scratch-db SCRATCH` built first; this script
only reads it. It searches every first and second wording once with memory off (top 50 notes,
their final scores, exact title matches marked) and embeds them, then replays the protocol of
`eval repeat` offline for each design and seed: the seen first queries "opened" their first
relevant note (noisy: 20 % a wrong one), each repeat's notes gain weight x top score x the
noisy-or of what the past searches lend (as search/memory.py adds it), and nDCG@5 is scored. It
reproduces `eval repeat`'s memory-off figures exactly and its memory figures within ~0.01
(graph expansion and retriever weights are not replayed on the lent score). Designs:

    shipped  search/memory.py's evidence: result overlap + 0.1 x query-vector standing (z over
             the past queries) - 0.05 x the opened note's place; lends from 0.7, fully at 1.0
    csls     the same with the standing of the CSLS score (2 cos - both sides' density)
    anchor   the anchor-text design: the vector margin over the runner-up past query that led
             to another note, plus 0.1 x the stems shared (Jaccard, the full-text row), lends
             from a margin of MARGIN, fully 0.01 above it; the opened note found anywhere
    anchor-top5  the same, only for a note among this query's own top 5
    learnt   every signal at once (query-vector standing and margin, shared stems, result
             overlap, the opened note's place here), weighed by a logistic model of "this past
             search is this repeat's first wording", cross-fitted: a repeat's weights are fitted
             on the pairs of the other four fifths of the needs, over 40 splits; lends from a
             probability of LEARNT_FROM (--learnt-from), fully 0.3 above it. What any
             combination of these signals can tell, without tuning on the query it scores.
"""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path

import numpy as np

from mindtui.audience import Audience
from mindtui.config import load_settings
from mindtui.models.holder import shared_holder
from mindtui.search.engine import SearchOptions
from mindtui.search.query import parse_query
from mindtui.service.core import Service

from repeat_ceiling import arguments  # bench/ is the script's folder, first on sys.path

TOP = 10  # candidates compared for result overlap (search.memory_overlap_top)


def gather(golden: list[dict], repeats: list[dict], db: Path) -> dict:
    settings = load_settings().with_overrides(db=str(db))
    holder = shared_holder()
    out = {}
    with Service(settings, audience=Audience.OWNER, models=holder) as service:
        embedder = holder.embedder(settings, None, wait=True)
        for item in golden + repeats:
            results = service.search(item["query"], SearchOptions(limit=50, log=False, kind="notes", memory=False))
            out[item["id"]] = {"item": item, "vector": np.asarray(embedder.embed_query(item["query"])),
                               "stems": parse_query(item["query"]).stem_set,
                               "ranking": [(r.path, r.score, "protected" in r.explain) for r in results.results]}
    return out


def ndcg5(ranked: list[str], item: dict) -> float:
    gains = {**{p: 0.5 for p in item.get("partial_paths", [])}, **{p: 1.0 for p in item["relevant_paths"]}}
    dcg = sum(gains.get(p, 0.0) / math.log2(i + 2) for i, p in enumerate(ranked[:5]))
    ideal = sorted(gains.values(), reverse=True)[:5]
    return dcg / sum(g / math.log2(i + 2) for i, g in enumerate(ideal))


def lend_shipped(q, past, cosines, data, csls=False):
    if csls:
        vectors = np.array([data[p]["vector"] for p, _ in past])
        between = vectors @ vectors.T
        np.fill_diagonal(between, -np.inf)
        cosines = 2 * cosines - np.sort(between, axis=1)[:, -3:].mean(axis=1) - np.sort(cosines)[-3:].mean()
    standing = (cosines - cosines.mean()) / (cosines.std() or 1.0)
    place = {x: i for i, (x, *_) in enumerate(data[q]["ranking"][:TOP], start=1)}
    spread = sum(1 / r for r in range(1, TOP + 1))
    out = []
    for (p, note), stands in zip(past, standing):
        shared = sum(1 / math.sqrt(place[x] * r) for r, (x, *_) in enumerate(data[p]["ranking"][:TOP], 1) if x in place)
        evidence = shared / spread + 0.1 * stands - 0.05 * place.get(note, TOP + 1)
        out.append(min(1.0, max(0.0, (evidence - 0.7) / 0.3)))
    return out


def lend_anchor(q, past, cosines, data, margin_from=0.02, within=None):
    place = {x: i for i, (x, *_) in enumerate(data[q]["ranking"], start=1)}
    out = []
    for i, (p, note) in enumerate(past):
        runner_up = max((c for c, (_, n) in zip(cosines, past) if n != note), default=0.0)
        a, b = data[q]["stems"], data[p]["stems"]
        words = len(a & b) / len(a | b) if a | b else 0.0
        evidence = cosines[i] - runner_up + 0.1 * words
        found = within is None or place.get(note, 99) <= within
        out.append(min(1.0, max(0.0, (evidence - margin_from) / 0.01)) if found else 0.0)
    return out


def pair_signals(q, past, cosines, data) -> np.ndarray:
    """Per past search: what it and this query share (the learnt design's inputs)."""
    standing = (cosines - cosines.mean()) / (cosines.std() or 1.0)
    place = {x: i for i, (x, *_) in enumerate(data[q]["ranking"], start=1)}
    spread = sum(1 / r for r in range(1, TOP + 1))
    rows = []
    for i, (p, note) in enumerate(past):
        runner_up = max((c for c, (_, n) in zip(cosines, past) if n != note), default=0.0)
        a, b = data[q]["stems"], data[p]["stems"]
        words = len(a & b) / len(a | b) if a | b else 0.0
        shared = sum(1 / math.sqrt(place[x] * r) for r, (x, *_) in enumerate(data[p]["ranking"][:TOP], 1)
                     if place.get(x, TOP + 1) <= TOP) / spread
        found = place.get(note, 99)
        rows.append([1.0, standing[i], 10 * (cosines[i] - runner_up), 5 * words, shared, math.log(found),
                     float(found <= 3), float(found <= TOP)])
    return np.array(rows)


class Learnt:
    """The learnt design: logistic weights per repeat, fitted without that repeat's need."""

    SPLITS, FOLDS = 40, 5

    def __init__(self, data: dict, start: float) -> None:
        self.start, firsts = start, sorted(k for k, v in data.items() if "first_id" not in v["item"])
        repeats = sorted(k for k, v in data.items() if "first_id" in v["item"])
        pairs: list[tuple[str, np.ndarray, np.ndarray]] = []  # (repeat, signals, is its first wording)
        for split in range(self.SPLITS):
            seen = sorted(random.Random(1000 + split).sample(firsts, len(firsts) // 2))
            past = [(p, data[p]["item"]["relevant_paths"][0]) for p in seen]
            vectors = np.array([data[p]["vector"] for p, _ in past])
            for q in repeats:
                truth = np.array([float(p == data[q]["item"]["first_id"]) for p, _ in past])
                pairs.append((q, pair_signals(q, past, vectors @ data[q]["vector"], data), truth))
        shuffled = random.Random(0).sample(repeats, len(repeats))
        self.weights = {}
        for fold in range(self.FOLDS):
            held = set(shuffled[fold::self.FOLDS])
            signals = np.vstack([s for q, s, _ in pairs if q not in held])
            truth = np.concatenate([t for q, _, t in pairs if q not in held])
            weights = _logistic(signals, truth)
            self.weights |= {q: weights for q in held}

    def __call__(self, q, past, cosines, data):
        chance = 1 / (1 + np.exp(-pair_signals(q, past, cosines, data) @ self.weights[q]))
        return list(np.clip((chance - self.start) / 0.3, 0.0, 1.0))


def _logistic(signals: np.ndarray, truth: np.ndarray, ridge: float = 1e-3) -> np.ndarray:
    weights = np.zeros(signals.shape[1])
    for _ in range(50):  # Newton's method
        chance = 1 / (1 + np.exp(-signals @ weights))
        hessian = (signals.T * (chance * (1 - chance))) @ signals + ridge * np.eye(len(weights))
        weights -= np.linalg.solve(hessian, signals.T @ (chance - truth) + ridge * weights)
    return weights


DESIGNS = {"shipped": lend_shipped, "csls": lambda *a: lend_shipped(*a, csls=True),
           "anchor": lend_anchor, "anchor-top5": lambda *a: lend_anchor(*a, within=5)}


def replay(data: dict, seed: int, design, noisy: bool, weight: float = 1.5) -> dict:
    needs = sorted(k for k, v in data.items() if "first_id" not in v["item"])
    seen = sorted(random.Random(seed).sample(needs, len(needs) // 2))
    wrong = set(random.Random(seed + 1).sample(seen, round(0.2 * len(seen)))) if noisy else set()
    past = []
    for p in seen:
        item = data[p]["item"]
        judged = set(item["relevant_paths"]) | set(item.get("partial_paths", []))
        note = item["relevant_paths"][0] if p not in wrong else next(
            (x for x, *_ in data[p]["ranking"] if x not in judged), None)
        if note:
            past.append((p, note))
    vectors = np.array([data[p]["vector"] for p, _ in past])
    scores: dict[str, list[tuple[float, float]]] = {"seen": [], "control": []}
    for q, entry in data.items():
        item = entry["item"]
        if "first_id" not in item:
            continue
        base = {x: s for x, s, _ in entry["ranking"]}
        protected = [x for x, _, p in entry["ranking"] if p]
        a, lent = entry["stems"], {}
        for (p, note), share in zip(past, design(q, past, vectors @ entry["vector"], data)):
            b = data[p]["stems"]
            words = len(a & b) / len(a | b) if a | b else 0.0
            share = max(share, words if words >= 0.5 else 0.0)  # typed again (search.memory_min_shared_words)
            if share > 0:
                lent[note] = 1 - (1 - lent.get(note, 0.0)) * (1 - share)
        top = max(base.values(), default=1.0)
        final = dict(base)
        for note, share in lent.items():
            final[note] = final.get(note, 0.0) + weight * top * share
        order = protected + sorted((x for x in final if x not in protected), key=lambda x: -final[x])
        group = "seen" if item["first_id"] in seen else "control"
        scores[group].append((ndcg5(order, item), ndcg5([x for x, *_ in entry["ranking"]], item)))
    return {g: {"memory": round(float(np.mean([m for m, _ in v])), 3), "off": round(float(np.mean([o for _, o in v])), 3)}
            for g, v in scores.items()}


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv, __doc__.splitlines()[0], "22,7,5,11,3,9", learnt_from=True)
    golden = json.loads(args.golden.read_text(encoding="utf-8"))
    repeats = json.loads(args.repeat.read_text(encoding="utf-8"))
    data = gather(golden, repeats, args.db)
    seeds = [int(s) for s in args.seeds.split(",")]
    designs = {**DESIGNS, **{f"learnt>{start:g}": Learnt(data, start) for start in args.learnt_from}}
    for name, design in designs.items():
        for noisy in (False, True):
            runs = [replay(data, seed, design, noisy) for seed in seeds]
            gain = [r["seen"]["memory"] - r["seen"]["off"] for r in runs]
            loss = [r["control"]["memory"] - r["control"]["off"] for r in runs]
            print(json.dumps({"design": name, "noisy": noisy, "seen_gain_mean": round(float(np.mean(gain)), 3),
                              "control_change_mean": round(float(np.mean(loss)), 3),
                              "control_change_worst": round(min(loss), 3),
                              "per_seed": {s: r for s, r in zip(seeds, runs)}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
