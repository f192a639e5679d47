"""How the CLI prints results for people (the `--json` forms come from the service's `as_dict`),
and the exit codes it uses (defined in mindtui.errors)."""

from __future__ import annotations

import argparse
import json
import sys

from mindtui.errors import (  # noqa: F401 - the CLI's exit codes, re-exported for cli and cli_queue
    EXIT_CONFIG, EXIT_DATABASE, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_LOCKED, EXIT_OK, EXIT_USAGE,
)
from mindtui.service.printable import printable, printable_line


def emit(args: argparse.Namespace, data: dict, human: str) -> None:
    if args.json:
        json.dump(data, sys.stdout, ensure_ascii=False, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(printable(human.rstrip("\n")) + "\n")


def positive_int(text: str) -> int:
    """An argparse type for --limit: a whole number of 1 or more (0 and -5 gave one result, or all)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is less than 1")
    return value


def to_stderr(text: str) -> None:
    """A diagnostic for people on stderr, its control characters shown (see service.printable).
    Without a stderr (started with `2>&-`) it is dropped: print() would put it on stdout, among the results."""
    if sys.stderr is not None:
        print(printable(text), file=sys.stderr)


def print_warnings(warnings: list[dict], limit: int = 20) -> None:
    """An import's per-file warnings (too large, binary, not UTF-8, bad frontmatter), on stderr."""
    for warning in warnings[:limit]:
        to_stderr(f"warning: {warning['path']}: {warning['reason']}")
    if len(warnings) > limit:
        to_stderr(f"warning: ... and {len(warnings) - limit} more (see --json)")


def report_table(report: dict) -> str:
    keys = [k for k, v in report.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    width = max((len(k) for k in keys), default=0)
    return "\n".join(f"{k.ljust(width)}  {report[k]}" for k in keys)


def job_summary(result) -> str:
    """A line a step on stdout; a step's error is not repeated here: the CLI writes it on stderr
    (`error: step ...`), where a terminal shows it just above."""
    return "\n".join(f"{s.step}: {s.status} in {s.seconds:.1f} s" + (" (its error: see stderr)" if s.error else "")
                     for s in result.steps)


def _run_error(run: dict, width: int = 160) -> str:
    """A step's error on its line, cut to `width` characters (--json has it whole)."""
    error = " ".join((run.get("error") or "").split())
    if not error or run["status"] == "ok":
        return ""
    return ": " + printable_line(error if len(error) <= width else error[:width - 1] + "…")


def search_text(response, explain: bool) -> str:
    lines = []
    for number, result in enumerate(response.results, start=1):
        if getattr(result, "kind", "note") == "knowledge":
            where = f"  ({result.path})" if result.path else ""
            lines.append(f"{number:>2}. [knowledge #{result.item_id} {result.note_type}] {result.title}{where}  "
                         f"{result.score:.4f}")
        else:
            lines.append(f"{number:>2}. {result.title}  ({result.path})  {result.score:.4f}")
        lines.append(f"    {result.snippet}")
        if explain:
            lines.append(f"    explain: {json.dumps(result.explain, ensure_ascii=False)}")
            if result.explain.get("memory"):
                lines.append(f"    memory: {result.explain['memory']['why']}")
    return "\n".join(lines) if lines else "no results"


def _suggestion_tag(extra: dict) -> str:
    parts = [f"cosine {extra['cosine']:.3f}"] if extra.get("cosine") is not None else []
    if extra.get("shared_links"):
        parts.append(f"shared links {extra['shared_links']:.2f}")
    return ", ".join(parts)


def neighbours_text(view, limit: int) -> str:
    lines = [f"{view.title}  ({view.path})"]
    for group, entries in view.groups.items():
        lines.append(f"\n{group} ({len(entries)})")
        for entry in entries[:limit]:
            extra = entry.extra
            tag = (_suggestion_tag(extra) if group == "suggestions" else
                   f"weight {entry.weight:g}" + (" confirmed" if extra.get("confirmed") else "")
                   + ("" if extra.get("indexed", True) else " not indexed"))
            arrow = {"in": "<-", "out": "->", "both": "<->"}.get(extra.get("direction", ""), "")
            lines.append(f"  {arrow + ' ' if arrow else ''}{entry.kind:<12} {entry.title}  ({entry.path})  {tag}")
            if entry.evidence:
                lines.append(f"      {entry.evidence[:160]}")
        if len(entries) > limit:
            lines.append(f"  ... {len(entries) - limit} more (--limit, --json)")
    return "\n".join(lines)


def status_text(status: dict) -> str:
    embedding = status["embedding"]
    counts = {k: v for k, v in status.items() if isinstance(v, int) and not isinstance(v, bool) and k != "schema_version"}
    lines = [f"database {status['db']}  (schema {status['schema_version']}, read as {status['audience']})",
             f"vault    {status['vault'] or '-'}", report_table(counts),
             f"embedding coverage  {embedding['coverage']:.1%} ({embedding['chunks_with_vector']} of "
             f"{embedding['chunks_embeddable']} chunks, model {embedding['model'] or '-'})"]
    if "storage" in status:
        storage = status["storage"]
        lines.append(f"database size  {storage['db_bytes'] / 1e6:.1f} MB ({storage['bytes_per_note']:,} bytes a note, "
                     f"{storage['bytes_per_chunk']:,} a chunk)")
    lists = status.get("fulltext_lists")
    if lists and lists["phrases"]:
        written = lists["rows_written_since"]
        lines.append(f"full-text lists  {lists['phrases']:,} common phrases, {written:,} row{'' if written == 1 else 's'}"
                     " written since" + ("" if lists["in_use"] else ": too many, not used until the next nightly"))
    working = status.get("working") or {}
    if working.get("job"):
        lines.append(f"running now    {working['job']['job'] or 'a job'} (pid {working['job']['pid'] or '?'})")
    if working.get("watcher"):
        lines.append(f"watching       the vault's edits are imported by pid {working['watcher']['pid'] or '?'}")
    if status.get("indexes_owed"):
        lines.append(f"indexes owed   {len(status['indexes_owed'])}: "
                     + ("a cold import builds them at its end (the next import, should this one stop);"
                        " searches are right but slower meanwhile" if working.get("job") else
                        "a cold import was stopped before it built them; searches are right but slower"
                        " until `mindtui index` builds them"))
    lines.extend(f"model {m['role']}: {m['status']}" + (f" ({m['reason']})" if m["reason"] else "")
                 for m in status["models"])
    lines.extend(f"{run['started_at']}  {run['job']}/{run['step']}  {run['status']}" + _run_error(run)
                 for run in status["recent_runs"])
    if status.get("learnt_settings"):  # the nightly fit's values (a setting in your file always wins)
        lines.append("learnt   " + "  ".join(f"{k}={v}" for k, v in status["learnt_settings"].items()))
    return "\n".join(lines)


def curation_list_text(cards, counts: dict[str, int]) -> str:
    lines = [f"{c.item_id:>5}  {c.kind:<15} {c.importance:.2f}  {'' if c.status == 'open' else f'[{c.status}] '}"
             f"{c.subject}  ·  {c.description}" for c in cards]
    lines.append(("" if not cards else "\n") + "open: " + " · ".join(f"{kind} {n}" for kind, n in counts.items()))
    return "\n".join(lines) if cards else "no cards\n" + lines[-1]


def curation_card_text(card) -> str:
    lines = [f"card {card.item_id}  {card.kind}  {card.status}  importance {card.importance:.2f}",
             card.subject, card.description]
    if card.snoozed_until:
        lines.append(f"snoozed until {card.snoozed_until}")
    if card.answer:
        lines.append(f"answer: {json.dumps(card.answer, ensure_ascii=False)}")
    for key, value in card.payload.items():
        if isinstance(value, list):
            lines.append(f"{key}:")
            lines.extend(f"  - {json.dumps(entry, ensure_ascii=False) if isinstance(entry, dict) else entry}"
                         for entry in value)
        else:
            lines.append(f"{key}: {json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else value}")
    lines.append("actions:")
    for action in card.actions:
        args = "".join(f" --{a['name']} {a['type'].upper()}" + ("" if a["required"] else "?") for a in action["args"])
        lines.append(f"  {action['key']}  {action['name']}{args}  {action['description']}")
    return "\n".join(lines)


def curation_outcome_text(outcome) -> str:
    if outcome is None:
        return "nothing to undo"
    files = "".join(f"\n  {path}" for path in outcome.changed_files)
    return f"card {outcome.item_id}: {outcome.message} (now {outcome.status}){files}"


# -- knowledge items ----------------------------------------------------------------------

def _item_line(view) -> str:
    flags = "" if view.is_current else " (history)"
    flags += " [stale]" if view.stale_since else ""
    about = f"  about {view.about}" if view.about else ""
    return f"{view.item_id:>5}  {view.type:<11} {view.status:<10} {view.importance:.2f}  {view.title}{about}{flags}"


def knowledge_list_text(views) -> str:
    return "\n".join(_item_line(v) for v in views) if views else "no knowledge items"


def knowledge_item_text(view) -> str:
    lines = [f"item {view.item_id}  {view.type}  {view.status}" + ("" if view.is_current else " (no longer current)")
             + (f"  stale since {view.stale_since}" if view.stale_since else ""), view.title]
    if view.body:
        lines += ["", view.body]
    if view.quote:
        lines += ["", f"quote: \"{view.quote}\""]
    lines.append("")
    if view.about:
        lines.append(f"about      {view.about}" + (f"  ({view.about_path})" if view.about_path else ""))
    source = view.source_id + (f"  ({view.source_path}, chunk {view.source_chunk_seq})" if view.source_path else "")
    lines += [f"source     {view.source_type}: {source}",
              f"valid      from {view.valid_from}" + (f" to {view.ended_at}" if view.ended_at else ""),
              f"confidence {view.confidence:.2f}  importance {view.importance:.2f}  visibility {view.visibility}"]
    if view.superseded_by is not None:
        lines.append(f"superseded by item {view.superseded_by}")
    for label, chain in (("supersedes", view.supersedes), ("then", view.superseded_chain)):
        lines.extend(f"{label:<10} #{i['item_id']} {i['title']}  ({i['status']})" for i in chain)
    if view.sources:
        lines.append("stated by  " + ", ".join(s["source_id"] for s in view.sources))
    lines.extend(f"decision   {d['decided_at']}  {d['decision']}: {d['reason']}" for d in view.decisions)
    return "\n".join(lines)


def decision_text(decision: dict) -> str:
    refs = "".join(f"  {name} {decision[key]}" for name, key in (("item", "item_id"), ("card", "card_id"))
                   if decision.get(key) is not None)
    return f"{decision['decision']}{refs}: {decision['reason']}"


def ingest_text(results: list[dict]) -> str:
    lines = [f"line {r['line']}: {decision_text(r)}" for r in results]
    counts: dict[str, int] = {}
    for r in results:
        counts[r["decision"]] = counts.get(r["decision"], 0) + 1
    lines.append(" · ".join(f"{k} {v}" for k, v in sorted(counts.items())) if results else "no proposals")
    return "\n".join(lines)


def watch_line(change, as_json: bool) -> tuple[str, bool]:
    """A VaultChange of `mindtui watch` as one line, and whether it is a result (stdout: an import
    that reached the index) or a diagnostic (stderr)."""
    paths = sorted(p for p in change.paths if p != ".")
    report = change.report or {}
    counts = {k: report.get(f"notes_{k}", 0) for k in ("added", "changed", "renamed", "deleted")}
    if as_json and change.kind == "imported":
        return json.dumps({"event": "imported", "paths": paths, **counts}, ensure_ascii=False), True
    paths = [printable_line(p) for p in paths]  # one line a change, whatever a file name holds
    if change.kind == "imported":
        what = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "") or "the vault"
        return "imported " + what + ": " + ", ".join(f"{v} {k}" for k, v in counts.items()), True
    if change.kind == "waiting":
        return f"watch: another job holds the lock; trying again shortly ({change.detail})", False
    if change.kind == "done":
        return f"watch: done ({len(paths) or 'all'} path(s))", False
    return f"watch: {change.detail or change.kind}", False
