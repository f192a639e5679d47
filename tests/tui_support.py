"""Helpers for the TUI tests: a fixed database from the sample vault, and waiting for workers
instead of sleeping."""

from __future__ import annotations

import asyncio
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from mindtui.audience import Audience
from mindtui.config import load_settings
from mindtui.models.holder import ModelHolder
from mindtui.service import Service
from mindtui.store import open_database

FIXED_TIME = "2026-11-30T03:00:00+00:00"


class NoModelHere(Exception):
    pass


def no_model(settings, say):
    """An embedder factory for TUI plumbing tests: the fixed database has no vectors and no model."""
    raise NoModelHere("no model in this test")


def build_fixed_db(vault_root: Path, db_path: Path) -> None:
    """The sample vault imported with the graph step, no vectors (no model), and job runs and
    knowledge items at a fixed time (the Jobs and Knowledge screens show them)."""
    settings = load_settings().with_overrides(db=str(db_path))
    with Service(settings, audience=Audience.OWNER, models=ModelHolder(embedder_factory=no_model)) as service:
        result = service.run_job("nightly", steps=["import", "graph"], vault=vault_root)
        assert result.ok, result.as_dict()
    conn = open_database(db_path)
    try:
        with conn:
            conn.execute("UPDATE job_runs SET started_at = ?, ended_at = ?", (FIXED_TIME, FIXED_TIME))
            conn.execute("UPDATE knowledge_items SET valid_from = ?, created_at = ?, updated_at = ?,"
                         " importance_at = ?", (FIXED_TIME,) * 4)
    finally:
        conn.close()


def owner_service(db_path: Path, **overrides) -> Service:
    settings = load_settings().with_overrides(db=str(db_path), **overrides)
    return Service(settings, audience=Audience.OWNER, models=ModelHolder(embedder_factory=no_model))


async def settle(pilot, rounds: int = 20, timeout_s: float = 60.0) -> None:
    """Wait until no worker runs and the messages they posted are handled (a worker's answer
    may start the next worker, and a zero debounce starts one on the next tick).

    Fails (AssertionError naming the workers) when workers still run after `rounds` rounds, or
    one round's workers do not end within `timeout_s`: a test must not go on to assert on a
    screen whose answers are still coming."""
    app = pilot.app
    for _ in range(rounds):
        await pilot.pause()
        try:
            await asyncio.wait_for(app.workers.wait_for_complete(), timeout_s)
        except asyncio.TimeoutError:
            raise AssertionError(f"workers still running after {timeout_s} s: {_running(app)}") from None
        await pilot.pause()
        if not _running(app):
            return
    raise AssertionError(f"workers still running after {rounds} rounds of settle(): {_running(app)[:5]}")


def _running(app) -> list[str]:
    return [f"{worker.group}/{worker.name}" for worker in app.workers if worker.is_running]


def pilot_app(service: Service):
    """The app as the Pilot and snapshot tests drive it: the given service, no model loading, no
    status polling, no debounce (workers are waited for with settle), no live vault watcher."""
    from mindtui.tui.app import make_app

    return make_app(service.settings, service=service, load_model=False, poll_status=False, debounce_s=0,
                    watch_vault=False)


@contextmanager
def fixed_service(vault_root: Path, db_path: Path) -> Iterator[Service]:
    """An owner's service over the sample vault imported without vectors (build_fixed_db)."""
    build_fixed_db(vault_root, db_path)
    with owner_service(db_path) as service:
        yield service


async def until(pilot, condition, timeout_s: float = 120.0) -> None:
    """Wait (settling workers) until condition() holds: for what a child process reports, which
    no worker of the app waits for (a job's events come from its reader thread)."""
    import time

    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the condition did not come true"
        await settle(pilot)
        await pilot.pause(0.02)
