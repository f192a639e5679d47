"""`mindtui eval repeat` and `mindtui eval usage`: does usage memory find a need again?

repeat: the repeat-need protocol (shared/eval/obsidian-help-de/REPEAT.md) replayed through the
service as the TUI would do it, on a scratch index: a seeded half of the needs is "seen" (its
first query is searched and its first relevant note opened), the other half is the control;
then every repeat query (and every first query again, verbatim) is measured with memory on and
off. The noisy variant opens a wrong note for 20 % of the seen needs.

usage: the owner's own logged searches with opens, replayed against today's ranking (each
without its own memory): how often the note opened then comes first and within the top 5.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Callable

from mindtui.audience import Audience
from mindtui.config import Settings
from mindtui.evaluation import workspace
from mindtui.evaluation.commands import check_indexed, check_judged_entry, load_golden, read_json
from mindtui.evaluation.metrics import first_relevant_rank, score_runs
from mindtui.evaluation.workspace import EvalInputError
from mindtui.search.engine import SearchOptions
from mindtui.search.usage_replay import replay
from mindtui.store import open_database, usage_store
from mindtui.store.notes import indexed_paths

REPEAT_METRICS = ["ndcg@5", "ndcg@10", "hit@1", "hit@5", "mrr"]
NOISE_SHARE = 0.2
LIMIT = 10


def load_repeat(path: Path, golden: list[dict]) -> list[dict]:
    data = read_json(path)
    first_ids = {item["id"] for item in golden}
    if not isinstance(data, list):
        raise EvalInputError(f"{path}: expected a JSON list of repeat queries")
    if not data:
        raise EvalInputError(f"{path}: no repeat queries: nothing to measure")
    ids: set[str] = set()
    for number, item in enumerate(data, start=1):
        check_judged_entry(path, number, item)
        # Ids key the queries beside the golden ones: a repeat id that is missing, repeated or a
        # golden id would put one query's judgements on another.
        repeat_id = item.get("id")
        if not isinstance(repeat_id, str) or not repeat_id:
            raise EvalInputError(f"{path}: entry {number} needs an \"id\" (a non-empty string)")
        if repeat_id in ids or repeat_id in first_ids:
            raise EvalInputError(f"{path}: entry {number}: id {repeat_id!r} is used twice (here or in the golden set)")
        ids.add(repeat_id)
        first_id = item.get("first_id")
        if not isinstance(first_id, str) or first_id not in first_ids:
            raise EvalInputError(f"{path}: entry {number}: first_id {first_id!r} is not in the golden set")
    return data


def _qrels(item: dict) -> dict[str, float]:
    return {**{p: 0.5 for p in item.get("partial_paths", [])}, **{p: 1.0 for p in item["relevant_paths"]}}


def eval_repeat(settings: Settings, golden_path: Path, repeat_path: Path, vault: Path, *, holder,
                scratch: Path | None = None, scratch_db: Path | None = None, seed: int = 22,
                progress=None, message: Callable[[str], None] | None = None) -> dict:
    from mindtui.service.core import Service

    golden = load_golden(golden_path)
    repeats = load_repeat(repeat_path, golden)
    first = {item["id"]: item for item in golden}
    db_path = scratch_db or workspace.vault_db_path(settings, vault, scratch)
    workspace.prepare_vault(settings, vault, db_path, progress, message, holder=holder)
    needs = sorted({r["first_id"] for r in repeats})
    # A judged path the vault lacks scored 0 in silence (or stopped the run at its open, after the index).
    conn = open_database(db_path, readonly=True)
    try:
        indexed = indexed_paths(conn)
    finally:
        conn.close()
    check_indexed(golden_path, [first[f] for f in needs], vault, indexed)
    check_indexed(repeat_path, repeats, vault, indexed)
    seen = set(random.Random(seed).sample(needs, len(needs) // 2))
    wrong = set(random.Random(seed + 1).sample(sorted(seen), round(NOISE_SHARE * len(seen))))
    scratch_settings = settings.with_overrides(db=str(db_path))
    queries = {r["id"]: r["query"] for r in repeats} | {f: first[f]["query"] for f in needs}
    qrels = {r["id"]: _qrels(r) for r in repeats} | {f: _qrels(first[f]) for f in needs}
    group = {r["id"]: "seen" if r["first_id"] in seen else "control" for r in repeats}
    group |= {f: "seen" if f in seen else "control" for f in needs}
    verbatim = set(needs)
    report: dict = {"kind": "repeat", "source": str(repeat_path), "golden": str(golden_path), "vault": str(vault),
                    "queries": len(repeats), "seed": seed}
    with Service(scratch_settings, audience=Audience.OWNER, models=holder) as service:
        baseline = _rankings(service, queries, memory=False)
        split, per_query = [], {}
        for variant, noisy in (("clean", False), ("noisy", True)):
            _forget_all(db_path)
            opened = _teach(service, [first[f] for f in sorted(seen)], wrong if noisy else set())
            remembered = _rankings(service, queries, memory=True)
            scores = _scores(remembered, baseline, qrels, group, verbatim)
            if noisy:
                report["noisy"] = scores
            else:
                report.update(scores)
                split = [{"id": f, "group": "seen" if f in seen else "control", "opened": opened.get(f)}
                         for f in needs]
            for query_id in queries:
                row = per_query.setdefault(query_id, {"group": group[query_id], "query": queries[query_id][:120],
                                                      "rank_no_memory": first_relevant_rank(baseline[query_id],
                                                                                            qrels[query_id])})
                row[f"rank_{variant}"] = first_relevant_rank(remembered[query_id], qrels[query_id])
        _forget_all(db_path)
    for entry in split:
        entry["wrong_open_when_noisy"] = entry["id"] in wrong
    report["split"] = split
    report["per_query"] = per_query
    report["notices"] = []
    return report


def _forget_all(db_path: Path) -> None:
    conn = open_database(db_path)
    try:
        usage_store.forget(conn, everything=True)
    finally:
        conn.close()


def _teach(service, needs: list[dict], wrong: set[str]) -> dict[str, str]:
    """Search each need's first query, then open its first relevant note (a wrong one for the ids
    in `wrong`: the best-ranked result that is neither relevant nor partial) as Enter would."""
    opened = {}
    for need in needs:
        response = service.search(need["query"], SearchOptions(limit=LIMIT, log=False, kind="notes"))
        keys = [r.log_key for r in response.results]
        target = need["relevant_paths"][0]
        if need["id"] in wrong:
            judged = set(need["relevant_paths"]) | set(need.get("partial_paths", []))
            target = next((r.path for r in response.results if r.path not in judged), None)
            if target is None:
                continue
        service.record_open(need["query"], "hybrid", keys, target, "enter")
        opened[need["id"]] = target
    return opened


def _rankings(service, queries: dict[str, str], memory: bool) -> dict[str, list[str]]:
    options = SearchOptions(limit=LIMIT, log=False, kind="notes", memory=memory)
    return {q: [r.path for r in service.search(text, options).results] for q, text in queries.items()}


def _scores(remembered: dict, baseline: dict, qrels: dict, group: dict, verbatim: set[str]) -> dict:
    """{"seen": {"memory": {...}, "no_memory": {...}, "verbatim": {"memory", "no_memory"}}, "control": ...}."""
    out = {}
    for name in ("seen", "control"):
        repeat = {q: j for q, j in qrels.items() if group[q] == name and q not in verbatim}
        again = {q: j for q, j in qrels.items() if group[q] == name and q in verbatim}
        out[name] = {"memory": score_runs(remembered, repeat, REPEAT_METRICS),
                     "no_memory": score_runs(baseline, repeat, REPEAT_METRICS),
                     "queries": len(repeat),
                     "verbatim": {"memory": score_runs(remembered, again, REPEAT_METRICS),
                                  "no_memory": score_runs(baseline, again, REPEAT_METRICS)}}
    return out


def eval_usage(service) -> dict:
    """The owner's searches with opens, each searched again now without its own memory (and with
    memory off, to compare): hit@1 and hit@5 of the notes opened then, overall and per month."""
    with service._pool.connection() as pooled:
        return {"kind": "usage", **replay(service._engine(pooled)), "notices": []}


def format_report(report: dict) -> str:
    """The tables `mindtui eval repeat` and `mindtui eval usage` print."""
    if report["kind"] == "usage":
        lines = [f"usage: {report['searches']} logged searches with {report['opens']} opens, searched again now "
                 "(each without its own memory)",
                 f"{'':<10}{'memory hit@1':>14}{'hit@5':>8}{'off hit@1':>12}{'hit@5':>8}{'searches':>10}"]
        for row in [{"month": "all", "searches": report["searches"], **report}] + report["months"]:
            lines.append(f"{row['month']:<10}{row['memory']['hit@1']:>14.3f}{row['memory']['hit@5']:>8.3f}"
                         f"{row['no_memory']['hit@1']:>12.3f}{row['no_memory']['hit@5']:>8.3f}{row['searches']:>10}")
        return "\n".join(lines)
    lines = [f"repeat: {report['source']}  ({report['queries']} needs, seed {report['seed']}; "
             f"{sum(e['group'] == 'seen' for e in report['split'])} seen)",
             f"{'':<34}" + "".join(f"{m:>9}" for m in REPEAT_METRICS)]
    for variant, scores in (("", report), ("noisy ", report["noisy"])):
        for name in ("seen", "control"):
            part = scores[name]
            for label, values in (("memory", part["memory"]), ("no memory", part["no_memory"]),
                                  ("verbatim, memory", part["verbatim"]["memory"]),
                                  ("verbatim, no memory", part["verbatim"]["no_memory"])):
                lines.append(f"{variant + name + ' ' + label:<34}" + "".join(f"{values[m]:>9.3f}"
                                                                           for m in REPEAT_METRICS))
    return "\n".join(lines)
