"""The live vault's import runs for the service: each one a job child (`mindtui --job watch`).

A child rather than a thread: pure-Python parsing holds the GIL and would starve the TUI's keys,
and the child runs jobs.child_nice nicer (see job_process). It imports, then (watch.embed) embeds
the changed chunks; the embedding model is loaded in the child and freed when it exits, so a
long-running watcher does not keep ~500 MB resident between changes.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable

from mindtui.config import Settings
from mindtui.jobs.lock import WATCH_JOB
from mindtui.jobs.watch import RunOutcome
from mindtui.service.job_process import JobProcess


class ChildImportRunner:
    """VaultWatcher's runner: one `mindtui --job watch --steps import[,embed]` child per run."""

    def __init__(self, settings: Settings, vault: Path) -> None:
        # The child embeds for watch.embed_budget_s at most: the lock is free again soon.
        self.settings = settings.with_values({"jobs": {"embed_budget_s": settings.watch.embed_budget_s}})
        self.vault = vault
        self._process: JobProcess | None = None
        self._cancelled = False
        self._lock = threading.Lock()

    def run(self, paths: frozenset[str], imported: Callable[[dict], None]) -> RunOutcome:
        steps = ["import", "embed"] if self.settings.watch.embed else ["import"]
        with self._lock:
            if self._cancelled:
                return RunOutcome("cancelled", "the watcher is stopping")
            process = self._process = JobProcess(self.settings, WATCH_JOB, steps=steps, vault=self.vault)
        failures = []
        more = False
        for event in process.events():
            if event["event"] != "step_done":
                continue
            if event.get("status") == "ok" and event.get("step") == "import":
                imported(event.get("report") or {})
            elif event.get("status") == "ok" and event.get("step") == "embed":
                more = bool((event.get("report") or {}).get("remaining"))
            elif event.get("status") == "failed":
                failures.append(f"{event.get('step')}: {event.get('error')}")
        outcome = process.wait()
        if outcome.locked:
            return RunOutcome("locked", outcome.error or "another job holds the lock")
        if outcome.cancelled:
            return RunOutcome("cancelled", "cancelled")
        if not outcome.ok:
            tail = outcome.error or (outcome.stderr_tail[-1] if outcome.stderr_tail else "")
            return RunOutcome("failed", "; ".join(failures) or tail or f"exit code {outcome.returncode}")
        return RunOutcome("ok", more=more)

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            process = self._process
        if process is not None and process.running:
            process.cancel()
