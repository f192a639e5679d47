"""The quality guard: every development set and category against bench/quality_baseline.json.

Run it before merging anything that touches parsing, chunking, embedding or ranking:

    .venv/bin/python bench/quality_guard.py [--eval-dir DIR] [--cache-dir DIR] [--only SET[,SET]]
                                            [--json] [--update-baseline]

It runs mindtui's own evaluation (the code behind `mindtui eval`) with the shipped defaults on
    help-de          obsidian-help-de golden.json on its vault (golden: nDCG@5, Hit@1, per category)
    help-de-repeat   obsidian-help-de repeat.json, the second wording of each golden query (same index)
    xquad-de         xquad-r-de/sentences, BEIR test split (nDCG@10)
    scifact          scifact, BEIR test split, the full corpus (nDCG@10)
    sample           tests/golden/sample_vault.json on sample_vault/ (in the repo)
    help-de-links    the linked-pair test on the help-de vault (hit@10, recall@10)
and compares each set's figures with the baseline: the shipped system (golden sets hybrid+graph,
the others hybrid: `default_systems`, ablation's "shipped") and the fts-only and vector-only
lists (a chunking change shows first in the vector list) per set, the shipped system per
category of the golden sets. A figure may drop by at most 0.005 (a set) or 0.02 (a category):
mindtui.evaluation.guard says why these.

Exit codes: 0 nothing dropped beyond its tolerance; 1 a drop (the table row says which), a set
that could not be measured, or a baseline figure this run did not produce; 2 usage error (also:
no evaluation folder, no baseline file). `--only` runs a subset while iterating: the full run is
the gate. `--update-baseline` writes the figures of this run (of the sets run) into the
baseline: commit that file on its own, saying why the figures moved.

The settings are the shipped defaults (config/mindtui.yaml): your config file and MINDTUI_*
settings are ignored, except the data folder. Each source has one scratch index in the cache
folder (default <data dir>/quality-guard, so MINDTUI_DATA_DIR keeps two checkouts apart; or
--cache-dir), imported again on every run (incremental) and embedded only where a chunk's text
is new: vectors are keyed by the hash of the embedded text, so after a chunking change only
the chunks whose text changed are embedded again. The table goes to stdout; progress and what
each index imported and embedded go to stderr.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from mindtui.config import load_settings  # noqa: E402
from mindtui.console import StderrProgress  # noqa: E402
from mindtui.errors import MindtuiError  # noqa: E402
from mindtui.evaluation import commands, guard, workspace  # noqa: E402

BASELINE = REPO / "bench" / "quality_baseline.json"
SHIPPED = {"golden": "hybrid+graph", "beir": "hybrid", "links": "hybrid"}
METRICS = {"golden": ["ndcg@5", "hit@1"], "beir": ["ndcg@10"], "links": ["hit@10", "recall@10"]}
EXIT_USAGE = 2


@dataclass(frozen=True)
class DevSet:
    name: str
    kind: str  # golden, beir or links
    source: str  # golden JSON, BEIR folder or vault: relative to the eval folder, or to the repo
    vault: str | None = None
    in_repo: bool = False

    def paths(self, eval_dir: Path) -> tuple[Path, Path | None]:
        base = REPO if self.in_repo else eval_dir
        return base / self.source, (base / self.vault if self.vault else None)


# Quick sets first, SciFact (the longest to embed) last.
SETS = [
    DevSet("help-de", "golden", "obsidian-help-de/golden.json", "obsidian-help-de/vault"),
    DevSet("help-de-repeat", "golden", "obsidian-help-de/repeat.json", "obsidian-help-de/vault"),
    DevSet("help-de-links", "links", "obsidian-help-de/vault"),
    DevSet("sample", "golden", "tests/golden/sample_vault.json", "sample_vault", in_repo=True),
    DevSet("xquad-de", "beir", "xquad-r-de/sentences"),
    DevSet("scifact", "beir", "scifact"),
]
SET_NAMES = [s.name for s in SETS]


class UsageError(Exception):
    pass


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def default_eval_dir() -> Path:
    """<repo>/../shared/eval; in a git worktree whose own parent has none, the main checkout's."""
    candidates = [REPO.parent / "shared" / "eval"]
    try:
        common = subprocess.run(["git", "rev-parse", "--path-format=absolute", "--git-common-dir"], cwd=REPO,
                                capture_output=True, text=True, check=True).stdout.strip()
        candidates.append(Path(common).parent.parent / "shared" / "eval")
    except (OSError, subprocess.CalledProcessError):
        pass
    return next((c for c in candidates if c.is_dir()), candidates[0])


def shipped_settings(threads: int | None):
    """The bundled defaults, with the data folder the user's settings name (models, caches)
    and the embedding threads asked for (they change the time, not the vectors)."""
    own = load_settings()
    ignored = sorted(key for key in own.chosen if key != "data_dir")
    if ignored:
        say(f"quality guard: measuring the shipped defaults; ignoring your settings {', '.join(ignored)}")
    settings = load_settings({"MINDTUI_CONFIG_FILE": os.devnull, "MINDTUI_DATA_DIR": str(own.data_dir)})
    return settings if threads is None else settings.with_values({"models": {"threads": threads}}, "--threads")


def commit_of_checkout() -> str:
    """The checkout's commit, with "+changes" when tracked files differ from it."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    try:
        head = git("rev-parse", "--short", "HEAD")
        return head + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def measure(dev: DevSet, eval_dir: Path, cache: Path, settings, holder, progress: StderrProgress) -> tuple[dict, dict]:
    """(the eval report, what preparing its index did: imported notes, chunks embedded, seconds)."""
    source, vault = dev.paths(eval_dir)
    systems = ["fts", "vector", SHIPPED[dev.kind]]
    common = dict(systems=systems, scratch=cache, progress=progress, message=progress.message, holder=holder)
    started = time.monotonic()
    if dev.kind == "beir":
        beir = workspace.load_beir(source, "test")
        vault, db = workspace.beir_workspace(settings, source, cache)
        workspace.write_beir_vault(beir, vault)
    else:
        db = workspace.vault_db_path(settings, vault or source, cache)
    # Prepared here (the eval below finds nothing left to do) to tell what this run embedded.
    steps = workspace.prepare_vault(settings, vault or source, db, progress, progress.message, holder=holder)
    prepared = time.monotonic()
    if dev.kind == "golden":
        report = commands.eval_golden(settings, source, vault, db_path=db, **common)
    elif dev.kind == "beir":
        report = commands.eval_beir(settings, source, max_queries=None, split="test", db_path=db, **common)
    else:
        report = commands.eval_links(settings, source, sample=None, db_path=db, **common)
    imported, embedded = steps.get("import", {}), steps.get("embed", {})
    index = {"db": str(db), "notes": imported.get("notes_total"), "notes_imported":
             imported.get("notes_added", 0) + imported.get("notes_changed", 0), "chunks": imported.get("chunks_total"),
             "chunks_embedded": embedded.get("embedded", 0), "chunks_reused": embedded.get("skipped", 0),
             "prepare_s": round(prepared - started, 1), "eval_s": round(time.monotonic() - prepared, 1)}
    return report, index


def read_baseline(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not a readable baseline ({exc})") from exc
    if not isinstance(data, dict) or not isinstance(data.get("sets"), dict):
        raise UsageError(f"{path}: not a quality baseline (no \"sets\")")
    return data


def write_baseline(path: Path, old: dict, now: dict, commit: str) -> None:
    measured = datetime.date.today().isoformat()
    sets = {**old.get("sets", {}), **{name: {"commit": commit, "measured": measured, **figures}
                                      for name, figures in now.items()}}
    data = {"about": "bench/quality_guard.py's baseline: the figures a change is compared with. Rewrite it "
                     "with --update-baseline in a commit of its own that says why the figures moved.",
            "sets": {name: sets[name] for name in SET_NAMES if name in sets}}
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     epilog=f"sets: {', '.join(SET_NAMES)}")
    parser.add_argument("--eval-dir", type=Path, help="the evaluation data (default <repo>/../shared/eval)")
    parser.add_argument("--cache-dir", type=Path, help="the scratch indexes (default <data dir>/quality-guard)")
    parser.add_argument("--baseline", type=Path, default=BASELINE, help=f"default {BASELINE.relative_to(REPO)}")
    parser.add_argument("--only", action="append", default=[], metavar="SET[,SET]",
                        help="run only these sets (repeatable); not the gate")
    parser.add_argument("--update-baseline", action="store_true", help="write this run's figures as the baseline")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--threads", type=int, help="llama.cpp threads for embedding (default: models.threads, "
                        "0 = all cores; 1 on a loaded machine: two threads that wait for each other burn CPU)")
    args = parser.parse_args(argv)
    args.only = [name.strip() for value in args.only for name in value.split(",") if name.strip()]
    unknown = [name for name in args.only if name not in SET_NAMES]
    if unknown:
        parser.error(f"unknown set(s) {', '.join(unknown)}; choose from {', '.join(SET_NAMES)}")
    return args


def check_folders(args: argparse.Namespace, chosen: list[DevSet], settings) -> tuple[Path, Path]:
    eval_dir = (args.eval_dir or default_eval_dir()).resolve()
    if not eval_dir.is_dir() and any(not dev.in_repo for dev in chosen):
        raise UsageError(f"no evaluation folder at {eval_dir}: the development sets live in ../shared/eval beside "
                         "the clone (a user's clone has none). Give --eval-dir DIR, or --only sample")
    cache = (args.cache_dir or settings.data_dir / "quality-guard").resolve()
    if cache == REPO or REPO in cache.parents:
        raise UsageError(f"--cache-dir {cache} is inside the repository; keep the scratch indexes outside it")
    return eval_dir, cache


def rerun_command(argv: list[str]) -> str:
    script = Path(__file__).resolve()
    return " ".join([".venv/bin/python", str(script.relative_to(REPO)), *argv])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    chosen = [dev for dev in SETS if not args.only or dev.name in args.only]
    try:
        settings = shipped_settings(args.threads)
        eval_dir, cache = check_folders(args, chosen, settings)
        baseline = read_baseline(args.baseline)
        if not baseline and not args.update_baseline:
            raise UsageError(f"no baseline at {args.baseline}: measure one with --update-baseline (and commit it)")
    except (UsageError, MindtuiError) as exc:
        say(f"quality guard: {exc}")
        return EXIT_USAGE
    from mindtui.models.holder import ModelHolder

    say(f"quality guard: {len(chosen)} sets from {eval_dir}; scratch indexes in {cache}")
    cache.mkdir(parents=True, exist_ok=True)
    progress = StderrProgress(interval=10.0)
    holder = ModelHolder()
    # Held for the whole run: the embed step releases its use of the holder, and the last
    # release would unload the model (and its query cache) between two sets.
    holder.acquire()
    started = time.monotonic()
    now, indexes, failures = {}, {}, {}
    try:
        for dev in chosen:
            say(f"quality guard: {dev.name}")
            try:
                report, indexes[dev.name] = measure(dev, eval_dir, cache, settings, holder, progress)
                now[dev.name] = guard.set_figures(report, SHIPPED[dev.kind], METRICS[dev.kind])
            except MindtuiError as exc:
                progress.finish()
                failures[dev.name] = str(exc)
                say(f"quality guard: {dev.name} could not be measured: {exc}")
                continue
            progress.finish()
            index = indexes[dev.name]
            say(f"  {dev.name}: {index['notes']} notes ({index['notes_imported']} imported), {index['chunks']} chunks"
                f" ({index['chunks_embedded']} embedded, {index['chunks_reused']} reused); index "
                f"{index['prepare_s']:.1f} s, eval {index['eval_s']:.1f} s")
    finally:
        holder.release()
    seconds = time.monotonic() - started
    rows = guard.compare(baseline.get("sets", {}), now, [dev.name for dev in chosen])
    code = 1 if failures else guard.exit_code(rows)
    if args.update_baseline and not failures:
        write_baseline(args.baseline, baseline, now, commit_of_checkout())
        say(f"quality guard: wrote {args.baseline} ({', '.join(now)}): commit it on its own, saying why")
        code = 0
    embedded = sum(index["chunks_embedded"] for index in indexes.values())
    summary = (f"{guard.totals(rows)}; {embedded:,} chunks embedded; {seconds / 60:.1f} min"
               + (f"; could not measure: {', '.join(failures)}" if failures else ""))
    verdict = "PASS" if code == 0 else "FAIL"
    if args.update_baseline and not failures:
        verdict = f"BASELINE WRITTEN to {args.baseline}"
    elif args.only:
        verdict += " (a partial run with --only: the full run is the gate)"
    if args.json:
        print(json.dumps({"exit_code": code, "verdict": verdict, "eval_dir": str(eval_dir), "cache_dir": str(cache),
                          "tolerances": {"set": guard.SET_TOLERANCE, "category": guard.CATEGORY_TOLERANCE},
                          "rows": [row.as_dict() for row in rows], "sets": now, "indexes": indexes,
                          "failures": failures, "seconds": round(seconds, 1), "rerun": rerun_command(argv)},
                         indent=1, ensure_ascii=False))
    else:
        print(guard.format_table(rows))
        print(f"\n{verdict}: {summary}")
        print(f"tolerances: a set's figure {guard.SET_TOLERANCE:g}, a category's {guard.CATEGORY_TOLERANCE:g}")
        print(f"rerun: {rerun_command(argv)}")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
