"""Helpers for the TUI tests: a fixed database from the sample vault, and waiting for workers
instead of sleeping."""

from __future__ import annotations

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


async def settle(pilot, rounds: int = 20) -> None:
    """Wait until no worker runs and the messages they posted are handled (a worker's answer
    may start the next worker, and a zero debounce starts one on the next tick)."""
    app = pilot.app
    for _ in range(rounds):
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        if not any(worker.is_running for worker in app.workers):
            return


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
