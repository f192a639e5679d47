"""`mindtui status` and the job history tell a job that runs from one that was killed, and say
which process works on the database now (service.status_report)."""

from __future__ import annotations

import json
import os

from mindtui.audience import Audience
from mindtui.cli import main
from mindtui.config import load_settings
from mindtui.models.holder import ModelHolder
from mindtui.jobs.lock import WATCHER_LOCK_SUFFIX, JobLock
from mindtui.service import Service
from mindtui.store import jobs as job_store
from mindtui.store import open_database

from test_crash_safety import generate_vault, import_killed_at


def _status(db_path, capsys, *args) -> str:
    capsys.readouterr()
    assert main(["status", "--db", str(db_path), *args]) == 0
    return capsys.readouterr().out


def test_a_killed_import_reads_interrupted_and_a_running_job_running(vault, db_path, capsys):
    generate_vault(vault)
    import_killed_at(db_path, vault.root, "commit", 2)  # a cold import, SIGKILLed with its indexes dropped

    status = json.loads(_status(db_path, capsys, "--json"))
    run = status["recent_runs"][0]
    assert (run["step"], run["status"]) == ("import", "interrupted")
    assert run["error"] == "the process ended before the step finished"
    assert status["working"] == {"job": None, "watcher": None}
    text = _status(db_path, capsys)
    assert "import  interrupted: the process ended before the step finished" in text and "running now" not in text
    assert "a cold import was stopped before it built them" in text
    with Service(load_settings().with_values({"db": str(db_path)}), audience=Audience.OWNER, models=ModelHolder()) as service:
        assert service.job_history()[0]["status"] == "interrupted"
    conn = open_database(db_path)
    try:
        assert conn.execute("SELECT status FROM job_runs").fetchall() == [("running",)]  # status only reads
    finally:
        conn.close()

    # A job that holds the lock: its running step is running, and status names it.
    with JobLock(db_path, "nightly"), JobLock(db_path, "watch", suffix=WATCHER_LOCK_SUFFIX):
        conn = open_database(db_path)
        try:
            job_store.mark_interrupted(conn)  # as every job does first under the lock
            job_store.start_step(conn, "b1", "nightly", "embed")
        finally:
            conn.close()
        status = json.loads(_status(db_path, capsys, "--json"))
        assert [(r["step"], r["status"]) for r in status["recent_runs"]] == [("embed", "running"),
                                                                           ("import", "interrupted")]
        me = str(os.getpid())
        assert status["working"] == {"job": {"pid": me, "job": "nightly"}, "watcher": {"pid": me}}
        text = _status(db_path, capsys)
        assert f"running now    nightly (pid {me})" in text and f"imported by pid {me}" in text
        assert "a cold import builds them at its end" in text
        with Service(load_settings().with_values({"db": str(db_path)}), audience=Audience.OWNER, models=ModelHolder()) as service:
            assert service.job_history()[0]["status"] == "running"
        agent = json.loads(_status(db_path, capsys, "--json", "--audience", "agent"))
        assert "working" not in agent  # what the owner's machine runs is not an agent's business
