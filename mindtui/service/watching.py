"""The live vault's import runs for the service: each one a job child (`mindtui --job watch`).

A child rather than a thread: pure-Python parsing holds the GIL and would starve the TUI's keys,
and the child runs jobs.child_nice nicer (see job_process). One child waits, started and
imported, for the next run (~50 MB, no model). It imports, then (watch.embed) embeds
the changed chunks; the embedding model is loaded in the child and freed when it exits, so a
long-running watcher does not keep ~500 MB resident between changes.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable

from mindtui.config import Settings
from mindtui.errors import DatabaseError, JobLockedError
from mindtui.jobs.lock import WATCH_JOB, WATCHER_LOCK_SUFFIX, JobLock, holder
from mindtui.jobs.watch import RunOutcome
from mindtui.service.job_process import JobProcess


def check_store(settings: Settings) -> None:
    """Raise now what would fail every run for good (exit 4 at the start, not a watch retrying
    for ever): a file that is not a mindtui database or has a newer schema, one mindtui may not
    write, a folder it cannot be made in. A busy or full database is left to the runs: it passes."""
    from mindtui.store import open_database
    from mindtui.store.connection import DatabaseReadOnlyError, is_read_only

    path = settings.db_path
    if settings.database.read_only:
        raise DatabaseReadOnlyError(f"{path}: database.read_only is set, and watching the vault writes the "
                                    "database; unset the setting to watch it")
    if not path.exists():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DatabaseError(f"{path}: its folder cannot be made ({exc.strerror or exc})") from exc
        return
    conn = open_database(path, migrate=False)
    try:
        if is_read_only(conn):
            raise DatabaseReadOnlyError(f"{path}: mindtui cannot write this file (permissions, a read-only "
                                        "mount), and watching the vault writes the database")
    finally:
        conn.close()


class ChildImportRunner:
    """VaultWatcher's runner: one `mindtui --job watch --steps import[,embed]` child per run.

    The next run's child is started as soon as a run ends and waits, its imports done
    (`--when-told`): a change then costs its import only, not ~1 s of Python starting. While
    another job holds the lock no child is told to run (`locked` comes back at once, and the
    watcher looks again watch.retry_s later). Nor while another watcher of the database watches
    (its lock, `<db>.watch-lock`, taken at the start and held until cancel()): two would import
    each change twice, the second run finding nothing changed (seconds of a scan at 100k notes).
    This one stands by (`locked`, said once) and takes over when the other stops."""

    def __init__(self, settings: Settings, vault: Path) -> None:
        # The child imports and embeds for watch.*_budget_s at most: the lock is free again soon.
        self.settings = settings.with_values({"jobs": {"embed_budget_s": settings.watch.embed_budget_s,
                                                       "import_budget_s": settings.watch.import_budget_s}})
        self.vault = vault
        self.steps = ["import", "embed"] if self.settings.watch.embed else ["import"]
        self._process: JobProcess | None = None
        self._spare: JobProcess | None = None
        self._cancelled = False
        self._lock = threading.Lock()
        self.children = 0  # children started (the spare included)
        self._watching = JobLock(settings.db_path, WATCH_JOB, suffix=WATCHER_LOCK_SUFFIX)

    def _child(self) -> JobProcess:
        self.children += 1
        return JobProcess(self.settings, WATCH_JOB, steps=self.steps, vault=self.vault, when_told=True)

    def _standing_by(self) -> str | None:
        """Why this watcher leaves the imports to another one, or None once it holds the watchers' lock."""
        with self._lock:
            if self._cancelled or self._watching.held:
                return None
            try:
                self._watching.acquire()
            except JobLockedError:
                return (f"another watcher (pid {self._watching.held_by or 'unknown'}) imports this vault's changes "
                        "into the database; this one stands by and takes over when it stops")
            except DatabaseError:  # no lock file here (a read-only folder): the job lock says why, run by run
                return None
            return None

    def prepare(self) -> None:
        """Start the next run's child now, if none waits (called after each run, and at start)."""
        if self._standing_by() is not None:
            return  # no child: the other watcher's imports need none of this one's
        with self._lock:
            if self._cancelled or (self._spare is not None and self._spare.running):
                return
            try:
                self._spare = self._child()
            except OSError:
                # No child can start now (no file handles, no memory, no processes left): not the
                # watch's failure. The run starts one itself, and says why if it still cannot.
                self._spare = None

    def run(self, paths: frozenset[str], imported: Callable[[dict], None]) -> RunOutcome:
        if (other := self._standing_by()) is not None:
            return RunOutcome("locked", other)
        taken = holder(self.settings.db_path)
        if taken is not None and taken != WATCH_JOB:
            return RunOutcome("locked", f"{taken or 'another job'} holds the lock")
        with self._lock:
            if self._cancelled:
                return RunOutcome("cancelled", "the watcher is stopping")
            spare, self._spare = self._spare, None
            process = self._process = spare if spare is not None and spare.running else self._child()
        process.go()
        try:
            return self._outcome(process, imported)
        finally:
            self.prepare()

    def _outcome(self, process: JobProcess, imported: Callable[[dict], None]) -> RunOutcome:
        failures = []
        more = False
        # What a run held back while its changes reached the index: a mass deletion the import
        # refused, an embedding that failed (a model that cannot load). Trying the run again does
        # not help until the user acts; the watcher says it once and goes on.
        held: list[str] = []
        reached = False  # the import step's changes are in the index
        for event in process.events():
            if event["event"] != "step_done":
                continue
            report = event.get("report") or {}
            said = f"{event.get('step')}: {event.get('error')}"
            if event.get("step") == "import" and (event.get("status") == "ok" or report.get("deletions_refused")):
                imported({**report, "run_id": event.get("run_id")})  # (the app knows its own runs by it)
                reached = True
                more = more or bool(report.get("remaining"))
                if event.get("status") != "ok":
                    held.append(said)
            elif event.get("status") == "ok" and event.get("step") == "embed":
                more = more or bool(report.get("remaining"))
            elif event.get("status") == "failed":
                (held if reached and event.get("step") == "embed" else failures).append(said)
        outcome = process.wait()
        if outcome.locked:
            return RunOutcome("locked", outcome.error or "another job holds the lock")
        if outcome.cancelled:
            return RunOutcome("cancelled", "cancelled")
        if not outcome.ok and (failures or not held):
            tail = outcome.error or (outcome.stderr_tail[-1] if outcome.stderr_tail else "")
            return RunOutcome("failed", "; ".join(failures) or tail or f"exit code {outcome.returncode}")
        return RunOutcome("ok", "; ".join(held), more=more)

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            process, spare, self._spare = self._process, self._spare, None
        if spare is not None:
            spare.dismiss()
        if process is not None and process.running:
            process.cancel()
        with self._lock:
            self._watching.release()  # a watcher standing by takes over
