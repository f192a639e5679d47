"""`Service.status()`: what the database holds, for one audience, and what works on it now.

A step's row says `running` from its start until its end. A job killed (`kill -9`, a power cut)
leaves it so until the next job marks it interrupted under the job lock (jobs.runner). The lock
is the truth meanwhile: every running step is written by a process that holds it, so a step
still running once the lock was seen free belongs to a process that ended (`settled`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable, TypeVar

import apsw

from mindtui.audience import Audience
from mindtui.config import Settings
from mindtui.jobs.lock import WATCHER_LOCK_SUFFIX, lock_holder
from mindtui.jobs.runner import JOBS
from mindtui.search.fit import apply_learnt
from mindtui.store import deferred_indexes, fts_champions, knowledge_store
from mindtui.store import edges as edge_store
from mindtui.store import jobs as job_store
from mindtui.store import notes as note_store
from mindtui.store import vectors as vector_store
from mindtui.store.maintenance import store_bytes
from mindtui.store.meta import EMBEDDING_MODEL_KEY, VAULT_KEY, get_meta
from mindtui.store.migrate import schema_version

ENDED_UNSEEN = "the process ended before the step finished"  # store.jobs.mark_interrupted's words
Runs = TypeVar("Runs")


def settled(read: Callable[[], Runs], runs_of: Callable[[Runs], list], db_path: Path) -> tuple[Runs, set[int]]:
    """(what `read()` returns, the run ids of its steps whose process ended while they ran).
    Read, look at the job lock, read again: a step running in the first read whose job held the
    lock then either ended (the second read has its status) or died."""
    first = read()
    running = {run.run_id for run in runs_of(first) if run.status == "running"}
    if not running or lock_holder(db_path) is not None:
        return first, set()
    again = read()
    return again, {run.run_id for run in runs_of(again) if run.status == "running" and run.run_id in running}


def as_interrupted(run: job_store.JobRun, dead: set[int]) -> job_store.JobRun:
    if run.run_id not in dead:
        return run
    return dataclasses.replace(run, status="interrupted", error=run.error or ENDED_UNSEEN)


def working_now(db_path: Path) -> dict:
    """The job holding the database's lock and the watcher importing the vault's edits, each
    {pid, job} or None."""
    job, watcher = lock_holder(db_path), lock_holder(db_path, WATCHER_LOCK_SUFFIX)
    return {"job": dict(zip(("pid", "job"), job)) if job else None,
            "watcher": {"pid": watcher[0]} if watcher else None}


def database_status(conn: apsw.Connection, settings: Settings, audience: Audience, models: list[dict]) -> dict:
    db_path = settings.db_path
    counts = {**note_store.corpus_counts(conn), **edge_store.edge_counts(conn), **knowledge_store.item_counts(conn)}
    model_id = get_meta(conn, EMBEDDING_MODEL_KEY)
    coverage = vector_store.chunk_coverage(conn, model_id or "")
    runs, dead = settled(lambda: job_store.recent_runs(conn, limit=len(JOBS["nightly"])),  # one nightly's steps
                         lambda runs: runs, db_path)
    owner = audience is Audience.OWNER
    embeddable = coverage["chunks"] - coverage["chunks_ai_excluded"]
    status = {
        "db": str(db_path), "audience": audience.value, "schema_version": schema_version(conn),
        "vault": get_meta(conn, VAULT_KEY), **counts,
        "embedding": {"model": model_id, "chunks_with_vector": coverage["chunks_with_vector"],
                      "chunks_embeddable": embeddable,
                      "coverage": round(coverage["chunks_with_vector"] / embeddable, 4) if embeddable else 1.0},
        "models": models, "recent_runs": [as_interrupted(run, dead).__dict__ for run in runs],
    }
    if not owner:
        return status
    db_bytes = store_bytes(conn)
    tuned = apply_learnt(conn, settings)
    # The owner's only: the file's size over the visible counts would tell an agent how much is hidden.
    status.update({
        "storage": {"db_bytes": db_bytes,
                    "bytes_per_note": round(db_bytes / counts["notes_total"]) if counts["notes_total"] else 0,
                    "bytes_per_chunk": round(db_bytes / counts["chunks_total"]) if counts["chunks_total"] else 0},
        "vector_index": vector_store.code_index_status(conn),  # counts every vector, hidden notes' too
        "indexes_owed": deferred_indexes.owed(conn),  # a killed cold import's: the next import builds them
        "fulltext_lists": fts_champions.status(conn),  # the nightly's champion lists of common phrases
        "working": working_now(db_path),
        "learnt_settings": {key: getattr(tuned.search, key.partition(".")[2]) for key in tuned.learnt},  # fitted to the owner's opens
    })
    return status
