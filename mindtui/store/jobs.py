"""Query functions for job runs (one row per step of a job invocation)."""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass

import apsw


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class JobRun:
    run_id: int
    batch_id: str
    job: str
    step: str
    status: str
    started_at: str
    ended_at: str | None
    report: dict
    error: str | None


def start_step(conn: apsw.Connection, batch_id: str, job: str, step: str) -> int:
    with conn:
        conn.execute(
            "INSERT INTO job_runs (batch_id, job, step, status, started_at) VALUES (?, ?, ?, 'running', ?)",
            (batch_id, job, step, _now()),
        )
        return conn.last_insert_rowid()


MAX_STORED_WARNINGS = 200


def storable_report(report: dict | None) -> dict:
    """A report as stored: at most MAX_STORED_WARNINGS warnings, plus how many there were."""
    report = dict(report or {})
    warnings = report.get("warnings")
    if isinstance(warnings, list) and len(warnings) > MAX_STORED_WARNINGS:
        report["warnings"] = warnings[:MAX_STORED_WARNINGS]
        report["warnings_total"] = len(warnings)
    return report


def finish_step(conn: apsw.Connection, run_id: int, status: str, report: dict | None = None,
                error: str | None = None) -> None:
    report = storable_report(report)
    with conn:
        conn.execute(
            "UPDATE job_runs SET status = ?, ended_at = ?, report = ?, error = ? WHERE run_id = ?",
            (status, _now(), json.dumps(report or {}, ensure_ascii=False, default=str), error, run_id),
        )


def mark_interrupted(conn: apsw.Connection) -> int:
    """Steps left 'running' by a process that died; call only while holding the job lock."""
    with conn:
        conn.execute(
            "UPDATE job_runs SET status = 'interrupted', ended_at = ?,"
            " error = coalesce(error, 'the process ended before the step finished') WHERE status = 'running'",
            (_now(),),
        )
        return conn.changes()


def prune_runs(conn: apsw.Connection, before: str) -> int:
    """Forget finished job runs that started before `before` (ISO time)."""
    with conn:
        conn.execute("DELETE FROM job_runs WHERE started_at < ? AND status != 'running'", (before,))
        return conn.changes()


def prune_batches(conn: apsw.Connection, job: str, keep: int) -> int:
    """Forget the finished runs of `job` but its last `keep` invocations."""
    with conn:
        conn.execute(
            "DELETE FROM job_runs WHERE job = ? AND status != 'running' AND batch_id NOT IN"
            " (SELECT batch_id FROM job_runs WHERE job = ? GROUP BY batch_id ORDER BY max(run_id) DESC LIMIT ?)",
            (job, job, keep),
        )
        return conn.changes()


def recent_runs(conn: apsw.Connection, limit: int = 50) -> list[JobRun]:
    rows = conn.execute(
        "SELECT run_id, batch_id, job, step, status, started_at, ended_at, report, error"
        " FROM job_runs ORDER BY run_id DESC LIMIT ?",
        (limit,),
    )
    return [JobRun(r[0], r[1], r[2], r[3], r[4], r[5], r[6], json.loads(r[7]), r[8]) for r in rows]


# What an import changed in the index (ImportReport's counts): a run without any left search as it was.
_INDEX_CHANGED = " + ".join(f"coalesce(json_extract(report, '$.notes_{what}'), 0)"
                            for what in ("added", "changed", "deleted", "renamed", "relinked"))


def index_changes(conn: apsw.Connection, limit: int = 8) -> list[int]:
    """The run ids of the newest import steps that changed the index (newest first), whichever
    process ran them: a front end that sees one it did not run itself shows its views again.
    A refused mass deletion fails the step after its other changes were written."""
    rows = conn.execute(
        "SELECT run_id FROM job_runs WHERE step = 'import' AND ended_at IS NOT NULL"
        " AND (status = 'ok' OR coalesce(json_extract(report, '$.deletions_refused'), 0) != 0)"
        f" AND {_INDEX_CHANGED} > 0 ORDER BY run_id DESC LIMIT ?", (limit,))
    return [row[0] for row in rows]


def recent_batches(conn: apsw.Connection, limit: int = 50) -> list[list[JobRun]]:
    """The last `limit` job invocations (newest first), each its step runs in the order they ran."""
    rows = conn.execute(
        "SELECT run_id, batch_id, job, step, status, started_at, ended_at, report, error FROM job_runs"
        " WHERE batch_id IN (SELECT batch_id FROM job_runs GROUP BY batch_id ORDER BY max(run_id) DESC LIMIT ?)"
        " ORDER BY run_id",
        (limit,),
    )
    batches: dict[str, list[JobRun]] = {}
    for r in rows:
        batches.setdefault(r[1], []).append(JobRun(r[0], r[1], r[2], r[3], r[4], r[5], r[6], json.loads(r[7]), r[8]))
    return sorted(batches.values(), key=lambda runs: runs[-1].run_id, reverse=True)
