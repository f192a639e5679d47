"""The job runner: named steps, one job_runs row each, one job at a time, honest exit codes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mindtui.config import load_settings
from mindtui.jobs.lock import JobLock, JobLockedError
from mindtui.jobs.runner import STEPS, run_job
from mindtui.store import jobs as job_store
from mindtui.store import open_database


def mindtui(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mindtui", *args], capture_output=True, text=True, timeout=timeout)


def runs(db_path) -> list[tuple[str, str, str]]:
    conn = open_database(db_path)
    try:
        return [(r.job, r.step, r.status) for r in reversed(job_store.recent_runs(conn))]
    finally:
        conn.close()


def test_nightly_job_runs_its_steps_and_records_them(sample_vault, db_path, real_model):
    # A generous limit: the embed step runs the real model over the whole sample vault on a busy machine.
    done = mindtui("--job", "nightly", "--vault", str(sample_vault.root), "--db", str(db_path), "--json",
                   timeout=900)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["ok"] is True
    assert [s["step"] for s in result["steps"]] == ["import", "embed", "graph", "consolidate", "gaps", "maintain"]
    assert all(s["seconds"] >= 0 for s in result["steps"]) and result["steps"][1]["seconds"] > 0  # embedding takes time
    imported, embedded = result["steps"][0]["report"], result["steps"][1]["report"]
    assert imported["notes_added"] > 40
    # Every chunk is accounted for: embedded once per distinct text, or left out (ai_processing: none);
    # the current knowledge items (the sample vault's callouts) are embedded too.
    assert embedded["embedded"] > 100 and embedded["excluded"] >= 1 and embedded["skipped"] == 0
    assert imported["knowledge"]["decisions"]["add"] >= 3
    conn = open_database(db_path)
    (items,) = conn.execute("SELECT count(*) FROM knowledge_items WHERE is_current = 1").fetchone()
    conn.close()
    assert embedded["embedded"] + embedded["duplicates"] + embedded["excluded"] == imported["chunks_total"] + items
    graph = result["steps"][2]["report"]
    assert graph["logs"] == ["Journal/Arbeitslog.md"] and graph["pairs"] > 20
    assert [m["session"] for m in graph["mass_edits"]] == ["2026-10-31 S13"]  # 14 notes: a mass edit, left out
    assert "S13" in done.stderr and "mass edit" in done.stderr
    assert runs(db_path) == [("nightly", "import", "ok"), ("nightly", "embed", "ok"), ("nightly", "graph", "ok"),
                             ("nightly", "consolidate", "ok"), ("nightly", "gaps", "ok"), ("nightly", "maintain", "ok")]
    consolidated = result["steps"][3]["report"]
    assert consolidated["confirmed"] == 1  # the SQLite decision, stated in two journal notes
    assert result["steps"][4]["report"]["kinds"]["gap_question"]["open"] == 5
    conn = open_database(db_path)
    (report,) = conn.execute("SELECT report FROM job_runs").fetchone()
    conn.close()
    assert json.loads(report)["notes_total"] == result["steps"][0]["report"]["notes_total"]


def test_second_job_exits_at_once_while_one_holds_the_lock(sample_vault, db_path):
    with JobLock(db_path):
        busy = mindtui("--job", "nightly", "--vault", str(sample_vault.root), "--db", str(db_path), timeout=30)
        also_busy = mindtui("index", str(sample_vault.root), "--db", str(db_path), timeout=30)
    assert busy.returncode == 3 and also_busy.returncode == 3
    assert "already running" in busy.stderr and busy.stdout == ""
    with pytest.raises(JobLockedError):
        with JobLock(db_path):
            JobLock(db_path).acquire()
    # once released, the job runs
    assert mindtui("--job", "nightly", "--steps", "import", "--vault", str(sample_vault.root),
                   "--db", str(db_path)).returncode == 0


def test_failing_step_is_recorded_and_earlier_steps_keep_their_data(sample_vault, db_path):
    def broken_step(ctx):
        raise RuntimeError("the disk is full (simulated)")

    steps = {**STEPS, "broken": broken_step}
    result = run_job("nightly", load_settings(), db_path=db_path, vault=sample_vault.root,
                     steps=["import", "broken"], step_table=steps)
    assert not result.ok
    assert [(s.step, s.status) for s in result.steps] == [("import", "ok"), ("broken", "failed")]
    assert "disk is full" in result.steps[1].error
    conn = open_database(db_path)
    (notes,) = conn.execute("SELECT count(*) FROM notes").fetchone()
    (error,) = conn.execute("SELECT error FROM job_runs WHERE step = 'broken'").fetchone()
    conn.close()
    assert notes > 40 and "disk is full" in error


def test_failed_step_gives_exit_code_1(tmp_path, db_path, real_model):
    done = mindtui("--job", "nightly", "--vault", str(tmp_path / "no-such-vault"), "--db", str(db_path))
    assert done.returncode == 1
    assert "does not exist" in done.stderr
    # the next steps still ran (embed had nothing to do; graph needs the vault too; the knowledge steps do not)
    assert runs(db_path) == [("nightly", "import", "failed"), ("nightly", "embed", "ok"),
                             ("nightly", "graph", "failed"), ("nightly", "consolidate", "ok"),
                             ("nightly", "gaps", "ok"), ("nightly", "maintain", "ok")]


def test_unknown_job_or_step_is_a_clear_error(db_path, sample_vault):
    done = mindtui("--job", "weekly", "--vault", str(sample_vault.root), "--db", str(db_path))
    assert done.returncode == 5 and "unknown job 'weekly'" in done.stderr
    done = mindtui("--job", "nightly", "--steps", "import,dream", "--vault", str(sample_vault.root), "--db", str(db_path))
    assert done.returncode == 5 and "dream" in done.stderr


def test_steps_left_running_by_a_dead_process_are_marked_interrupted(sample_vault, db_path):
    conn = open_database(db_path)
    job_store.start_step(conn, "deadbeef", "nightly", "import")
    conn.close()
    run_job("nightly", load_settings(), db_path=db_path, vault=sample_vault.root, steps=["import"])
    assert runs(db_path) == [("nightly", "import", "interrupted"), ("nightly", "import", "ok")]
