"""Run a job: its named steps in order, one job_runs row each, under the database's job lock.

A failing step is recorded with its error and the next steps still run (each step commits
its own work, so earlier steps' data stays). The job succeeds only if every step did.
"""

from __future__ import annotations

import traceback
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import apsw

from mindtui.config import Settings
from mindtui.jobs.lock import JobLock
from mindtui.store import open_database
from mindtui.store import jobs as job_store

# (step, done, total, detail): how steps report progress to a front end.
StepProgress = Callable[[str, int, int, str], None]


def _no_progress(step: str, done: int, total: int, detail: str) -> None:
    return None


def _no_message(text: str) -> None:
    return None


class StepError(Exception):
    """A step cannot run (bad input, missing configuration); the message is for the user."""


@dataclass
class StepContext:
    conn: apsw.Connection
    settings: Settings
    db_path: Path
    vault: Path | None
    step: str = ""
    progress: StepProgress = _no_progress
    message: Callable[[str], None] = _no_message  # a one-line notice for the user (stderr, TUI log)

    def report_progress(self, done: int, total: int, detail: str = "") -> None:
        self.progress(self.step, done, total, detail)


Step = Callable[[StepContext], dict]


def import_step(ctx: StepContext) -> dict:
    from mindtui.vault.importer import VaultImporter
    from mindtui.vault.types import load_type_registry

    if ctx.vault is None:
        raise StepError("no vault given: pass --vault PATH or set `vault:` in the config")
    importer = VaultImporter(
        ctx.conn, ctx.vault, load_type_registry(ctx.settings.types_file),
        exclude=list(ctx.settings.get("import.exclude", []) or []),
        max_file_bytes=int(ctx.settings.get("import.max_file_bytes", 2_000_000)),
        follow_symlinks=bool(ctx.settings.get("import.follow_symlinks", True)),
        progress=lambda done, total, path: ctx.report_progress(done, total, path),
    )
    return importer.run().as_dict()


def embed_step(ctx: StepContext) -> dict:
    from mindtui.models.embedder import Embedder
    from mindtui.models.files import ensure_embedding_model, threads
    from mindtui.models.sweep import run_embed_sweep

    model = ensure_embedding_model(ctx.settings, say=ctx.message)
    embedder = Embedder(model.path, model.model_id, threads(ctx.settings))
    try:
        report = run_embed_sweep(ctx.conn, embedder, batch_size=int(ctx.settings.get("models.embed_batch", 16)),
                                 progress=lambda done, total, detail: ctx.report_progress(done, total, detail))
    finally:
        embedder.close()
    for notice in report.notices:
        ctx.message(notice)
    return report.as_dict()


def graph_step(ctx: StepContext) -> dict:
    """Refresh the change graph from the work logs; drop search pairs of deleted notes."""
    from mindtui.graph.change_graph import build_change_graph
    from mindtui.store.graph_store import prune_search_pairs

    if ctx.vault is None:
        raise StepError("no vault given: pass --vault PATH or set `vault:` in the config")
    report = build_change_graph(ctx.conn, ctx.vault, ctx.settings).as_dict()
    if not report["logs"]:
        ctx.message("graph: no work log matches graph.work_logs; the change graph is empty")
    for mass in report["mass_edits"]:
        ctx.message(f"graph: {mass['log']} session {mass['session']} names {mass['notes']} notes "
                    f"(> graph.max_notes_per_session): a mass edit, left out")
    report["search_pairs_pruned"] = prune_search_pairs(ctx.conn)
    return report


STEPS: dict[str, Step] = {"import": import_step, "embed": embed_step, "graph": graph_step}
JOBS: dict[str, list[str]] = {"nightly": ["import", "embed", "graph"], "index": ["import"], "embed": ["embed"],
                              "graph": ["graph"]}


@dataclass
class StepResult:
    step: str
    status: str  # ok | failed
    report: dict
    error: str | None
    run_id: int


@dataclass
class JobResult:
    job: str
    batch_id: str
    steps: list[StepResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(s.status == "ok" for s in self.steps)

    def as_dict(self) -> dict:
        return {
            "job": self.job, "batch_id": self.batch_id, "ok": self.ok,
            "steps": [{"step": s.step, "status": s.status, "error": s.error, "report": s.report} for s in self.steps],
        }


def run_job(job: str, settings: Settings, *, db_path: Path, vault: Path | None,
            steps: list[str] | None = None, step_table: dict[str, Step] | None = None,
            progress: StepProgress | None = None, message: Callable[[str], None] | None = None) -> JobResult:
    """Raises JobLockedError when another job holds the lock, DatabaseError when the store is unusable."""
    table = STEPS if step_table is None else step_table
    names = list(steps) if steps is not None else JOBS.get(job)
    if names is None:
        raise StepError(f"unknown job {job!r}; known jobs: {', '.join(sorted(JOBS))}")
    unknown = [n for n in names if n not in table]
    if unknown:
        raise StepError(f"unknown step(s) {', '.join(unknown)}; known steps: {', '.join(table)}")

    result = JobResult(job, uuid.uuid4().hex[:12])
    with JobLock(db_path):
        conn = open_database(db_path, busy_timeout_ms=int(settings.get("database.busy_timeout_ms", 5000)))
        try:
            job_store.mark_interrupted(conn)
            for name in names:
                ctx = StepContext(conn, settings, db_path, vault, name, progress or _no_progress,
                                  message or _no_message)
                run_id = job_store.start_step(conn, result.batch_id, job, name)
                try:
                    report = table[name](ctx)
                except Exception as exc:  # a failing step is recorded; the next steps still run
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    error = str(exc) if isinstance(exc, StepError) else f"{type(exc).__name__}: {exc}"
                    detail = "" if isinstance(exc, StepError) else traceback.format_exc(limit=8)
                    job_store.finish_step(conn, run_id, "failed", {"traceback": detail} if detail else {}, error)
                    result.steps.append(StepResult(name, "failed", {}, error, run_id))
                    continue
                job_store.finish_step(conn, run_id, "ok", report)
                result.steps.append(StepResult(name, "ok", report, None, run_id))
        finally:
            conn.close()
    return result
