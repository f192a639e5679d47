"""`mindtui eval` behind the service: argument checks, then the evaluation on a scratch index."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from mindtui.config import Settings
from mindtui.evaluation import commands
from mindtui.evaluation.workspace import EvalInputError
from mindtui.progress import StepProgress

KINDS = ("beir", "golden", "links", "repeat", "usage")


def evaluate(settings: Settings, kind: str, source: Path, *, holder, vault: Path | None = None,
             systems: list[str] | None = None, max_queries: int | None = None, sample: int | None = None,
             split: str = "test", scratch: Path | None = None, scratch_db: Path | None = None,
             repeat: Path | None = None, seed: int | None = None,
             progress: StepProgress | None = None, message: Callable[[str], None] | None = None) -> dict:
    """Checks everything it can before any file is written; the scratch guard (a marker in the
    scratch database's meta table, never the configured database) lives in evaluation.workspace."""
    if kind not in KINDS:
        raise EvalInputError(f"unknown evaluation {kind!r}; choose from {', '.join(KINDS)}")
    commands.check_systems(systems)
    if kind in ("golden", "repeat") and vault is None:
        raise EvalInputError(f"eval {kind} needs --vault: the vault the golden set's paths refer to")
    if kind == "repeat" and repeat is None:
        raise EvalInputError("eval repeat needs GOLDEN and REPEAT: the first queries and their second wordings")
    progress = progress or (lambda step, done, total, detail: None)
    message = message or (lambda text: None)
    common = dict(systems=systems, scratch=scratch, db_path=scratch_db, progress=progress, message=message,
                  holder=holder)
    if kind == "beir":
        return commands.eval_beir(settings, source, max_queries=max_queries, split=split, **common)
    if kind == "golden":
        return commands.eval_golden(settings, source, vault, **common)
    if kind == "repeat":
        from mindtui.service.usage_eval import eval_repeat

        return eval_repeat(settings, source, repeat, vault, holder=holder, scratch=scratch, scratch_db=scratch_db,
                           progress=progress, message=message, **({"seed": seed} if seed is not None else {}))
    return commands.eval_links(settings, source, sample=sample, **common)


def format_report(report: dict) -> str:
    if report.get("kind") in ("repeat", "usage"):
        from mindtui.service.usage_eval import format_report as usage_report

        return usage_report(report)
    return commands.format_report(report)


def compare_reports(before: Path, after: Path) -> str:
    """`mindtui eval --compare A.json B.json`: two saved reports, query by query."""
    reports = []
    for path in (before, after):
        report = commands.read_json(path)
        if not isinstance(report, dict) or not isinstance(report.get("systems"), dict):
            raise EvalInputError(f"{path}: not a report of `mindtui eval --json`")
        reports.append(report)
    return commands.format_comparison(*reports, names=(before.name, after.name))
