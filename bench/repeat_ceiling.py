"""How far can usage memory lift repeat needs, if it must first tell which earlier search a new wording repeats?

    .venv/bin/python bench/repeat_ceiling.py GOLDEN REPEAT --db SCRATCH [--seeds 22,7,5]

SCRATCH is the index `mindtui eval repeat GOLDEN REPEAT --vault V --scratch-db SCRATCH` built
(and embedded) first; this script only reads it (no search is logged, no open recorded). Per
seed (the same seen/control split as `eval repeat`) it embeds every query once and reports, for
the anchor-text signals an earlier owner search gives (README "Usage memory"):

- nearest: seen repeats whose first wording is the nearest past query by query-vector cosine;
  by the CSLS score (2 cos - each side's mean cosine to its 3 nearest past queries, which
  corrects for "hub" queries close to everything);
- margin: the cosine of the nearest past query minus the runner-up's that opened another note,
  for seen repeats whose nearest is right, and the largest margins any control repeat reaches
  (a control repeat has no earlier search: whatever it is lent goes to an unrelated note);
- shared: seen repeats sharing at least one stem with their first wording, and control repeats
  sharing one with some past query;
- bound: Hit@1 if every seen repeat whose first wording is the nearest got its opened note first
  and nothing else changed (an oracle that knows which repeats are seen: no control is touched).
"""

from __future__ import annotations

import argparse
import json
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

NEIGHBOURS = 3  # CSLS neighbourhood


def arguments(argv: list[str] | None, description: str, seeds: str, learnt_from: bool = False) -> argparse.Namespace:
    """GOLDEN REPEAT --db SCRATCH --seeds A,B,... (this script's and bench/repeat_replay.py's, which
    also takes --learnt-from P,P,...)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("golden", type=Path)
    parser.add_argument("repeat", type=Path)
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--seeds", default=seeds)
    if learnt_from:
        parser.add_argument("--learnt-from", default="0.2,0.5,0.8",
                            type=lambda text: [float(v) for v in text.split(",")],
                            help="the learnt design's probabilities from which a past search lends")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv, __doc__.splitlines()[0], "22,7")
    golden = {g["id"]: g for g in json.loads(args.golden.read_text(encoding="utf-8"))}
    repeats = json.loads(args.repeat.read_text(encoding="utf-8"))
    settings = load_settings().with_overrides(db=str(args.db))
    holder = shared_holder()
    queries = {**{k: g["query"] for k, g in golden.items()}, **{r["id"]: r["query"] for r in repeats}}
    with Service(settings, audience=Audience.OWNER, models=holder) as service:
        embedder = holder.embedder(settings, None, wait=True)
        vectors = {k: np.asarray(embedder.embed_query(q)) for k, q in queries.items()}
        first_place = {r["id"]: [x.path for x in service.search(r["query"], SearchOptions(
            limit=10, log=False, kind="notes", memory=False)).results][:1] == r["relevant_paths"][:1]
            for r in repeats}
    stems = {k: parse_query(q).stem_set for k, q in queries.items()}
    needs = sorted(r["first_id"] for r in repeats)
    for seed in [int(s) for s in args.seeds.split(",")]:
        print(json.dumps({"seed": seed, **_ceiling(seed, needs, repeats, golden, vectors, stems, first_place)}))
    return 0


def _ceiling(seed, needs, repeats, golden, vectors, stems, first_place) -> dict:
    seen = sorted(random.Random(seed).sample(needs, len(needs) // 2))
    opened = [golden[p]["relevant_paths"][0] for p in seen]
    past = np.array([vectors[p] for p in seen])
    between = past @ past.T
    np.fill_diagonal(between, -np.inf)
    density = np.sort(between, axis=1)[:, -NEIGHBOURS:].mean(axis=1)
    nearest = csls = bound = shared_seen = shared_control = 0
    right_margins, control_margins = [], []
    for item in repeats:
        cosines = past @ vectors[item["id"]]
        best = int(np.argmax(cosines))
        runner_up = max((c for c, n in zip(cosines, opened) if n != opened[best]), default=0.0)
        margin = float(cosines[best] - runner_up)
        local = 2 * cosines - density - np.sort(cosines)[-NEIGHBOURS:].mean()
        words = [len(stems[item["id"]] & stems[p]) for p in seen]
        if item["first_id"] in seen:
            truth = seen.index(item["first_id"])
            nearest += best == truth
            csls += int(np.argmax(local)) == truth
            shared_seen += words[truth] > 0
            bound += first_place[item["id"]] or best == truth
            if best == truth:
                right_margins.append(margin)
        else:
            control_margins.append(margin)
            shared_control += max(words) > 0
    top_control = sorted(control_margins)[-3:]
    return {"seen": len(seen), "nearest": nearest, "nearest_csls": csls,
            "seen_right_margin_above_every_control": sum(m > top_control[-1] for m in right_margins),
            "control_top_margins": [round(float(m), 3) for m in top_control],
            "seen_right_margins_median": round(float(np.median(right_margins)), 3) if right_margins else None,
            "seen_sharing_a_stem_with_first": shared_seen, "control_sharing_a_stem_with_a_past_query": shared_control,
            "hit@1_bound": round(bound / len(seen), 3)}


if __name__ == "__main__":
    sys.exit(main())
