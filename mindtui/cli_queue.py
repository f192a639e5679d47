"""The owner's queue commands of `mindtui`: `curate` (the curation queue) and `knowledge` (items
and proposals): their arguments and how they print, over the service."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mindtui.cli_text import EXIT_FAILED, EXIT_OK, emit, positive_int, to_stderr
from mindtui.cli_text import curation_card_text, curation_list_text, curation_outcome_text, report_table
from mindtui.cli_text import decision_text, ingest_text, knowledge_item_text, knowledge_list_text
from mindtui.service import CURATION_KINDS, CURATION_STATUSES, KNOWLEDGE_SCHEMA, KNOWLEDGE_STATUSES
from mindtui.service import KNOWLEDGE_TYPES, InputError, Service


def knowledge_parser(sub, common: argparse.ArgumentParser, reading: argparse.ArgumentParser) -> None:
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
    listing.add_argument("--about", metavar="NOTE", help="only items about this entity note, or topic:TEXT")
    listing.add_argument("--type", dest="item_type", choices=KNOWLEDGE_TYPES, help="only this type")
    listing.add_argument("--status", choices=KNOWLEDGE_STATUSES, help="only this status")
    listing.add_argument("--all", action="store_true", help="superseded items too")
    listing.add_argument("--limit", type=positive_int, help="at most this many")
    show = actions.add_parser("show", parents=[common, reading], help="one item: provenance, chain, decisions",
                              description="An item with its quote, source, supersede chain both ways, its "
                                          "sources and the writer's decisions.")
    show.add_argument("item_id", metavar="ID", type=int, help="the item's id")


def curate_parser(sub, common: argparse.ArgumentParser) -> None:
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
    listing.add_argument("--limit", type=positive_int, help="at most this many cards")
    show = actions.add_parser("show", parents=[common], help="one card: its details and actions",
                              description="A card's details (links, lines, candidates, scores) and its actions.")
    show.add_argument("item_id", metavar="ID", type=int, help="the card's id")
    resolve = actions.add_parser("resolve", parents=[common], help="answer a card with one of its actions",
                                 description="Actions by kind: unresolved_link create|retarget|dismiss, "
                                             "alias_link link|dismiss, ambiguous_link pick|dismiss, link_suggestion accept|reject|snooze, "
                                             "mass_edit include|keep_out, unresolved_entity link|topic|reject|snooze, "
                                             "duplicate merge|confirm|supersede|reject|snooze, contradiction "
                                             "supersede|confirm|reject|snooze, missing_quote answer|confirm|reject|"
                                             "snooze, gap_question answer|reject|snooze, stale confirm|supersede|"
                                             "reject|snooze (`curate show ID` lists them).")
    resolve.add_argument("item_id", metavar="ID", type=int, help="the card's id")
    resolve.add_argument("action", metavar="ACTION", help="the action's name (see `curate show ID`)")
    resolve.add_argument("--target", metavar="NOTE", help="retarget, pick, link: the note (path, title, alias or id)")
    resolve.add_argument("--days", type=int, help="snooze: days until the card comes back")
    resolve.add_argument("--text", help="answer, supersede: the statement or quote (first line the statement)")
    resolve.add_argument("--type", dest="item_type", help="gap_question answer: the item's type (default fact)")
    actions.add_parser("undo", parents=[common], help="reverse the latest answer (its file change too)",
                       description="Reverse the latest answer not undone yet: the files it wrote (only if they "
                                   "are still as it left them) and the card's state.")
    actions.add_parser("refresh", parents=[common], help="refresh every kind now (as the nightly job does)",
                       description="Find new cards and close those whose cause is gone (the change graph is "
                                   "rebuilt for the mass edits).")


def curate(args, service: Service) -> int:
    command = args.curate_command
    if command == "list":
        cards = service.curation_list(args.kind, None if args.status == "all" else args.status, args.limit)
        counts = service.curation_counts()
        emit(args, {"cards": [card.as_dict() for card in cards], "counts": counts}, curation_list_text(cards, counts))
        return EXIT_OK
    if command == "show":
        card = service.curation_card(args.item_id)
        emit(args, card.as_dict(), curation_card_text(card))
        return EXIT_OK
    if command == "refresh":
        report = service.curation_refresh()
        emit(args, report, report_table(report) + "\n" + "\n".join(
            f"{kind}: {' '.join(f'{k} {v}' for k, v in counts.items())}" for kind, counts in report["kinds"].items()))
        return EXIT_OK
    if command == "undo":
        outcome = service.curation_undo()
    else:
        outcome = service.curation_resolve(args.item_id, args.action, target=args.target, days=args.days,
                                           text=args.text, type=args.item_type)
    for notice in outcome.notices if outcome else []:
        to_stderr(f"notice: {notice}")
    emit(args, outcome.as_dict() if outcome else {"undone": None}, curation_outcome_text(outcome))
    return EXIT_OK


def knowledge(args, service: Service) -> int:
    command = args.knowledge_command
    if command == "list":
        views = service.knowledge_list(args.about, args.item_type, args.status, not args.all, args.limit)
        emit(args, {"items": [v.as_dict() for v in views]}, knowledge_list_text(views))
        return EXIT_OK
    if command == "show":
        view = service.knowledge_item(args.item_id)
        emit(args, view.as_dict(), knowledge_item_text(view))
        return EXIT_OK
    if command == "add":
        proposal = {"schema": KNOWLEDGE_SCHEMA, "type": args.item_type, "title": args.title, "body": args.body,
                    "quote": args.quote, "about": args.about, "supersedes": args.supersedes,
                    "visibility": "private" if args.private else "shared"}
        decision = service.knowledge_submit({k: v for k, v in proposal.items() if v is not None}, "owner").as_dict()
        if decision["decision"] == "invalid":  # a diagnostic, not a result: stdout has it only as --json
            to_stderr(f"mindtui: not added: {decision['reason']}")
            if args.json:
                emit(args, decision, "")
            return EXIT_FAILED
        emit(args, decision, decision_text(decision))
        return EXIT_OK
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
            to_stderr(f"error: line {result['line']}: {result['reason']}")
    emit(args, {"results": results}, ingest_text(results))
    return EXIT_FAILED if any(r["decision"] == "invalid" for r in results) else EXIT_OK


def usage_parser(sub, common: argparse.ArgumentParser) -> None:
    usage = sub.add_parser(
        "usage", parents=[common], help="usage memory: forget what was learnt from your searches",
        description="What you opened after a search lifts that note for later searches that mean the same "
                    "(README \"Usage memory\"). forget removes logged searches with their opens and the search "
                    "pairs they taught: by query text (same text, any case), before a date, or all; with only "
                    "--note, that note's opens.")
    actions = usage.add_subparsers(dest="usage_command", metavar="ACTION", required=True)
    forget = actions.add_parser("forget", parents=[common], help="forget searches and opens")
    forget.add_argument("--query", metavar="TEXT", help="searches with this query text")
    forget.add_argument("--note", metavar="NOTE", help="opens of this note (path, title, alias or id)")
    forget.add_argument("--before", metavar="DATE", help="searches before this date (YYYY-MM-DD)")
    forget.add_argument("--all", dest="forget_all", action="store_true", help="every search and open")


def usage(args, service: Service) -> int:
    counts = service.usage_forget(query=args.query, note=args.note, before=args.before, everything=args.forget_all)
    emit(args, counts, f"forgot {counts['searches']} search(es), {counts['opens']} open(s); "
                       f"{counts['pairs_unlearnt']} search pair(s) unlearnt"
                       + ("; the search settings the nightly fitted to them are reset"
                          if counts.get("learnt_settings_forgotten") else ""))
    return EXIT_OK
