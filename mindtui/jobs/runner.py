"""Run a job: its named steps in order, one job_runs row each, under the database's job lock.

A failing step is recorded with its error and the next steps still run (each step commits
its own work, so earlier steps' data stays). A cancelled step stops at a safe point, is
recorded as cancelled, and the job stops there. The job succeeds only if every step did.
"""

from __future__ import annotations

import datetime
import time
import traceback
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import apsw

from mindtui.config import Settings
from mindtui.errors import Cancelled, ConfigError, InputError, MassDeleteRefused, MindtuiError, OperationFailed
from mindtui.jobs.lock import WATCH_JOB, JobLock
from mindtui.progress import NEVER_CANCELLED, CancelToken, StepProgress
from mindtui.store import jobs as job_store
from mindtui.store import open_database
from mindtui.store.vectors import use_code_index
from mindtui.store.batch import rollback_open_transaction
from mindtui.store.connection import DatabaseReadOnlyError
from mindtui.store.failures import store_errors, store_failure


def _no_progress(step: str, done: int, total: int, detail: str) -> None:
    return None


def _no_message(text: str) -> None:
    return None


class StepError(ConfigError):
    """A job or step cannot run as asked (unknown name, no vault configured)."""


@dataclass
class StepContext:
    conn: apsw.Connection
    settings: Settings
    db_path: Path
    vault: Path | None
    step: str = ""
    progress: StepProgress = _no_progress
    message: Callable[[str], None] = _no_message  # a one-line notice for the user (stderr, TUI log)
    cancel: CancelToken = NEVER_CANCELLED
    allow_mass_delete: bool = False
    models: object = None  # the process's ModelHolder (the embed step loads the embedder from it)

    def report_progress(self, done: int, total: int, detail: str = "") -> None:
        self.progress(self.step, done, total, detail)

    def need_vault(self) -> Path:
        if self.vault is None:
            raise StepError("no vault given: pass --vault PATH or set `vault:` in the config")
        return self.vault


Step = Callable[[StepContext], dict]


class ImportBudget(CancelToken):
    """The job's cancel, or the import's time (jobs.import_budget_s) spent. Reading and parsing
    the changed files stop once the time is spent (`reading_spent`: the files not reached wait
    for the next run), and so does writing, between two notes. Each is spent only after
    FREE_NOTES files (about one write batch): a run whose first reads alone outlast the budget
    still parses and writes a batch, so run after run moves on."""

    FREE_NOTES = 100

    def __init__(self, outer: CancelToken, seconds: float) -> None:
        super().__init__()
        self.outer = outer
        self.deadline = time.monotonic() + seconds
        self._checks = 0

    @property
    def spent(self) -> bool:
        return time.monotonic() >= self.deadline

    def reading_spent(self, parsed: int) -> bool:
        """Whether the import stops reading changed files, `parsed` of them parsed so far."""
        return parsed >= self.FREE_NOTES and self.spent

    @property
    def cancelled(self) -> bool:
        self._checks += 1
        return self.outer.cancelled or (self._checks > self.FREE_NOTES and self.spent)

    def check(self) -> None:
        self.outer.check()
        if self.spent:
            raise Cancelled("the import's time budget is spent; what it wrote is kept, the next run goes on")


def import_step(ctx: StepContext) -> dict:
    from mindtui.curation.actions import finish_pending
    from mindtui.curation.kinds import EditContext
    from mindtui.curation.refresh import refresh
    from mindtui.curation.registry import LINK_KINDS
    from mindtui.vault.importer import VaultImporter
    from mindtui.vault.types import load_type_registry

    finish_pending(EditContext(ctx.conn, ctx.settings, ctx.need_vault()))  # an answer killed before its files
    budget = ImportBudget(ctx.cancel, ctx.settings.jobs.import_budget_s) if ctx.settings.jobs.import_budget_s else None
    importer = VaultImporter(
        ctx.conn, ctx.need_vault(), load_type_registry(ctx.settings.types_file), ctx.settings,
        progress=lambda done, total, path: ctx.report_progress(done, total, path),
        cancel=budget or ctx.cancel, allow_mass_delete=ctx.allow_mass_delete,
        reading_spent=budget.reading_spent if budget else None)
    try:
        report = importer.run().as_dict()
    except Cancelled:
        if budget is None or not budget.spent or ctx.cancel.cancelled:
            raise
        ctx.message(f"import: stopped after jobs.import_budget_s {ctx.settings.jobs.import_budget_s:g} s; "
                    "the next run goes on")
        return {**importer.report.as_dict(), "remaining": True}  # links and cards: the run that ends it
    report["curation"] = refresh(ctx.conn, ctx.settings, kinds=LINK_KINDS).as_dict()  # link cards follow the links
    report["knowledge"] = _callouts(ctx)
    return report


def _callouts(ctx: StepContext) -> dict:
    """Knowledge callouts of the imported notes go to the writer; items whose callout is gone get a stale card."""
    from mindtui.curation.refresh import refresh
    from mindtui.knowledge.callout_sync import sync_callouts
    from mindtui.knowledge.cards import STALE_KINDS

    report = sync_callouts(ctx.conn, ctx.settings).as_dict()
    report["curation"] = refresh(ctx.conn, ctx.settings, kinds=STALE_KINDS).as_dict()
    return report


def embed_step(ctx: StepContext) -> dict:
    from mindtui.models.holder import shared_holder
    from mindtui.models.sweep import run_embed_sweep

    holder = ctx.models or shared_holder()
    holder.acquire()
    try:
        embedder = holder.embedder(ctx.settings, say=ctx.message)
        report = run_embed_sweep(ctx.conn, embedder, batch_size=ctx.settings.models.embed_batch,
                                 progress=lambda done, total, detail: ctx.report_progress(done, total, detail),
                                 cancel=ctx.cancel, budget_s=ctx.settings.jobs.embed_budget_s)
    finally:
        holder.release()
    for notice in report.notices:
        ctx.message(notice)
    return report.as_dict()


def _days_ago(days: int) -> str:
    then = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=days)
    return then.isoformat(timespec="seconds")


def graph_step(ctx: StepContext) -> dict:
    """Refresh the change graph from the work logs; drop search pairs of deleted notes and
    searches older than retention.search_log_days (0 keeps them forever), opens and query vectors older
    than privacy.usage_retention_days and opens of deleted notes; refresh the curation queue."""
    from mindtui.curation.refresh import refresh
    from mindtui.curation.registry import KINDS
    from mindtui.curation.sessions import MASS_EDITS, included_sessions
    from mindtui.graph.change_graph import build_change_graph
    from mindtui.store.graph_store import prune_search_pairs
    from mindtui.store.search_store import prune_search_log
    from mindtui.store.usage_store import prune_opens, scrubbing

    report = build_change_graph(ctx.conn, ctx.need_vault(), ctx.settings,
                                include=included_sessions(ctx.conn)).as_dict()  # mass edits the owner took in
    if not report["logs"]:
        ctx.message("graph: no work log matches graph.work_logs; the change graph is empty")
    for mass in report["mass_edits"]:
        ctx.message(f"graph: {mass['log']} session {mass['session']} names {mass['notes']} notes "
                    f"(> graph.max_notes_per_session): a mass edit, left out")
    report["search_pairs_pruned"] = prune_search_pairs(ctx.conn)
    usage_days = ctx.settings.privacy.usage_retention_days  # first: a forgotten search takes its opens along
    days = ctx.settings.retention.search_log_days
    with scrubbing(ctx.conn):  # forgotten is overwritten, as by `usage forget`
        report["usage"] = prune_opens(ctx.conn, _days_ago(usage_days) if usage_days else "")
        report["searches_forgotten"] = prune_search_log(ctx.conn, _days_ago(days)) if days else 0
    report.update(_usage_replay(ctx))
    kinds = [name for name, kind in KINDS.items() if kind.family != "knowledge"]  # those: the steps below
    report["curation"] = refresh(ctx.conn, ctx.settings, kinds=kinds,
                                 sources={MASS_EDITS: report["mass_edits"]}).as_dict()
    return report


def _usage_replay(ctx: StepContext) -> dict:
    """How often a note the owner opened after a search now comes first / in the top 5 when that
    search is replayed without its own memory (search/usage_replay.py; `mindtui eval usage`)."""
    from mindtui.search.engine import make_search_engine
    from mindtui.search.usage_replay import replay

    from mindtui.search.fit import apply_learnt, fit

    engine = make_search_engine(ctx.conn, apply_learnt(ctx.conn, ctx.settings), ctx.message, holder=ctx.models)
    report = {"fit": fit(ctx.conn, ctx.settings, engine.models)}
    found = replay(engine, ("memory",)) if ctx.settings.search.memory else {"searches": 0}
    if found["searches"]:
        report.update({"usage_searches_replayed": found["searches"], "usage_hit@1": found["memory"]["hit@1"],
                       "usage_hit@5": found["memory"]["hit@5"]})
    return report


def consolidate_step(ctx: StepContext) -> dict:
    """Exact duplicates superseded, corroborated drafts confirmed, stale sources flagged (cards),
    importance decayed and refreshed by the owner's searches (see knowledge.consolidate)."""
    from mindtui.curation.refresh import refresh
    from mindtui.knowledge.cards import STALE_KINDS
    from mindtui.knowledge.consolidate import consolidate

    report = consolidate(ctx.conn, ctx.settings).as_dict()
    report["curation"] = refresh(ctx.conn, ctx.settings, kinds=STALE_KINDS).as_dict()
    return report


def gaps_step(ctx: StepContext) -> dict:
    """Gap questions: entity notes with no confirmed knowledge, at most knowledge.max_gap_questions open."""
    from mindtui.curation.refresh import refresh
    from mindtui.knowledge.cards import GAP_KINDS

    return refresh(ctx.conn, ctx.settings, kinds=GAP_KINDS).as_dict()


def maintain_step(ctx: StepContext) -> dict:
    """The vector code index built or checked (its recall sampled, see vectors.code_index_upkeep),
    the full-text indexes' segments merged, the planner's statistics refreshed and the full-text
    champion lists made (store.fts_champions; last, once the other steps have written)."""
    from mindtui.store import fts_champions
    from mindtui.store.anchors import fill_indexed
    from mindtui.store.maintenance import optimize
    from mindtui.vault.links import anchor_text
    from mindtui.store.meta import EMBEDDING_MODEL_KEY, get_meta
    from mindtui.store.vectors import code_index_upkeep

    report = {"vector_index": code_index_upkeep(ctx.conn, ctx.settings.search, get_meta(ctx.conn, EMBEDDING_MODEL_KEY))}
    report.update(optimize(ctx.conn))
    # Anchor rows written before their text was kept get it, so the lists' queries can read them.
    report["anchor_texts_kept"] = fill_indexed(ctx.conn, anchor_text)
    return {**report, **fts_champions.build(
        ctx.conn, progress=lambda done, total: ctx.report_progress(done, total, "full-text champion lists"))}


def vector_index_step(ctx: StepContext) -> dict:
    """The vector code index fitted again and rebuilt now, whatever the number of vectors (on
    request only: `--steps vector_index`; the nightly's maintain step builds and checks it)."""
    from mindtui.store.meta import EMBEDDING_MODEL_KEY, get_meta
    from mindtui.store.vectors import code_index_upkeep

    return code_index_upkeep(ctx.conn, ctx.settings.search, get_meta(ctx.conn, EMBEDDING_MODEL_KEY), refit=True)


# What each step imports when it runs: a warm job child (`--when-told`) imports them while it waits.
STEP_MODULES: dict[str, tuple[str, ...]] = {
    "import": ("mindtui.curation.actions", "mindtui.curation.kinds", "mindtui.curation.refresh",
               "mindtui.curation.registry", "mindtui.vault.importer", "mindtui.vault.types",
               "mindtui.knowledge.callout_sync", "mindtui.knowledge.cards"),
    "embed": ("mindtui.models.holder", "mindtui.models.sweep"),
}


def preload(steps: list[str]) -> None:
    """Import what the steps need, ahead of running them."""
    import importlib

    for step in steps:
        for module in STEP_MODULES.get(step, ()):
            importlib.import_module(module)


STEPS: dict[str, Step] = {"import": import_step, "embed": embed_step, "graph": graph_step,
                          "consolidate": consolidate_step, "gaps": gaps_step, "maintain": maintain_step,
                          "vector_index": vector_index_step}
JOBS: dict[str, list[str]] = {"nightly": ["import", "embed", "graph", "consolidate", "gaps", "maintain"],
                              "index": ["import"],
                              "embed": ["embed"], "graph": ["graph"], "knowledge": ["consolidate", "gaps"],
                              WATCH_JOB: ["import", "embed"]}  # the live vault's run (mindtui.jobs.watch)


@dataclass
class StepResult:
    step: str
    status: str  # ok | failed | cancelled
    report: dict
    error: str | None
    run_id: int
    seconds: float = 0.0


@dataclass
class JobResult:
    job: str
    batch_id: str
    steps: list[StepResult] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # steps a cancel heard between steps left out

    @property
    def ok(self) -> bool:
        return not self.skipped and all(s.status == "ok" for s in self.steps)

    @property
    def cancelled(self) -> bool:
        return bool(self.skipped) or any(s.status == "cancelled" for s in self.steps)

    def as_dict(self) -> dict:
        return {
            "job": self.job, "batch_id": self.batch_id, "ok": self.ok, "cancelled": self.cancelled,
            "skipped": self.skipped,
            "steps": [{"step": s.step, "status": s.status, "error": s.error, "seconds": round(s.seconds, 3),
                       "report": s.report} for s in self.steps],
        }


class JobHooks:
    """What a front end hears of a job besides progress (the CLI's JSON-lines reporter, a test).
    Called in the job's thread; the defaults do nothing."""

    def job_started(self, job: str, batch_id: str, steps: list[str]) -> None:
        """The lock is held and the steps are about to run."""

    def step_started(self, step: str) -> None:
        """A step begins (before its first progress report)."""

    def step_finished(self, result: StepResult) -> None:
        """A step ended (ok, failed or cancelled) and is recorded in job_runs."""


NO_HOOKS = JobHooks()


def check_job(job: str, steps: list[str] | None, table: dict[str, Step] | None = None) -> list[str]:
    """The steps to run; StepError for an unknown job or step."""
    table = STEPS if table is None else table
    names = list(steps) if steps is not None else JOBS.get(job)
    if names is None:
        raise StepError(f"unknown job {job!r}; known jobs: {', '.join(sorted(JOBS))}")
    unknown = [n for n in names if n not in table]
    if unknown:
        raise StepError(f"unknown step(s) {', '.join(unknown)}; known steps: {', '.join(table)}")
    return names


def _report_of(exc: BaseException) -> dict:
    report = getattr(exc, "report", None)
    if report is None:
        return {}
    return report.as_dict() if hasattr(report, "as_dict") else dict(report)


def _record_storage_failure(conn: apsw.Connection, run_id: int, exc: BaseException, db_path: Path) -> None:
    """Record the step the storage stopped, if the storage still lets us. If it does not (the disk
    is still full), its row stays `running` and the next job marks it interrupted."""
    rollback_open_transaction(conn)
    try:
        job_store.finish_step(conn, run_id, "failed", _report_of(exc), str(store_failure(exc, db_path)))
    except apsw.Error:
        return  # the caller raises the step's own failure, which is what the user needs to read


def run_job(job: str, settings: Settings, *, db_path: Path, **options) -> JobResult:
    """Run `job` (options: vault, steps, step_table, progress, message, cancel, allow_mass_delete,
    models, hooks). Raises JobLockedError when another job holds the lock, DatabaseError when the
    store is unusable: missing, locked, read-only, or its disk full or failing. The job stops at
    such a failure (every next step would fail too); what the steps committed is kept and the next
    run continues."""
    with store_errors(db_path):  # the file or the disk, inside a step or around them: one line
        return _run_job(job, settings, db_path=db_path, **options)


def _run_job(job: str, settings: Settings, *, db_path: Path, vault: Path | None,
             steps: list[str] | None = None, step_table: dict[str, Step] | None = None,
             progress: StepProgress | None = None, message: Callable[[str], None] | None = None,
             cancel: CancelToken | None = None, allow_mass_delete: bool = False, models=None,
             hooks: JobHooks | None = None) -> JobResult:
    table = STEPS if step_table is None else step_table
    names = check_job(job, steps, table)
    if job == "index" and vault is not None and not Path(vault).is_dir():
        # before the lock and the database are made for it; the nightly runs on (its other steps need no vault)
        raise InputError(f"vault folder {vault} does not exist or is not a folder")
    cancel = cancel or NEVER_CANCELLED
    hooks = hooks or NO_HOOKS
    result = JobResult(job, uuid.uuid4().hex[:12])
    if settings.database.read_only:
        raise DatabaseReadOnlyError(f"{db_path}: database.read_only is set, and job {job!r} writes the database; "
                                    "unset the setting to run it (nothing was done)")
    with JobLock(db_path, job, settings.jobs.wait_for_watch_s):
        conn = open_database(db_path, busy_timeout_ms=settings.database.busy_timeout_ms)
        try:
            use_code_index(conn, settings.search)  # the graph step's suggestions search vectors too
            job_store.mark_interrupted(conn)
            if settings.retention.job_runs_days:
                job_store.prune_runs(conn, _days_ago(settings.retention.job_runs_days))
            if job == WATCH_JOB and settings.retention.watch_runs:  # a run per burst of edits, for a year
                job_store.prune_batches(conn, WATCH_JOB, settings.retention.watch_runs - 1)  # this one makes the count
            hooks.job_started(job, result.batch_id, names)
            for name in names:
                if cancel.cancelled:  # heard after the last step's final check: the rest is left out
                    result.skipped = names[names.index(name):]
                    break
                ctx = StepContext(conn, settings, db_path, vault, name, progress or _no_progress,
                                  message or _no_message, cancel, allow_mass_delete, models)
                run_id = job_store.start_step(conn, result.batch_id, job, name)
                hooks.step_started(name)
                status, report, error = "ok", {}, None
                began = time.monotonic()
                try:
                    report = table[name](ctx)
                except Cancelled as exc:
                    status, error = "cancelled", str(exc)
                except Exception as exc:  # a failing step is recorded; the next steps still run
                    if store_failure(exc, db_path) is not None:  # ... unless the file or its disk failed
                        _record_storage_failure(conn, run_id, exc, db_path)
                        raise
                    status = "failed"
                    error = str(exc) if isinstance(exc, MindtuiError) else f"{type(exc).__name__}: {exc}"
                    report = _report_of(exc)
                    if isinstance(exc, MassDeleteRefused):  # the rest is imported: a watcher takes the run as done
                        report["deletions_refused"] = True
                    if not isinstance(exc, (MindtuiError, OperationFailed)):
                        report["traceback"] = traceback.format_exc(limit=8)
                rollback_open_transaction(conn)
                job_store.finish_step(conn, run_id, status, report, error)
                result.steps.append(StepResult(name, status, report, error, run_id, time.monotonic() - began))
                hooks.step_finished(result.steps[-1])
                if status == "cancelled":
                    break
        finally:
            conn.close()
    return result
