"""The live vault's runs: a warm child waits for the next run, no child starts while another job
holds the lock, an import stops at its time budget and the next run goes on, and the lock's
holder is read without a race. Real job children, a real watcher; waits poll conditions."""

from __future__ import annotations

import fcntl
import os
import threading

from conftest import dump_database, run_import
from test_watch import WAIT_S, fts_paths, live, start_watching, wait_until, watch_runs  # noqa: F401 (fixture)

from mindtui.config import load_settings
from mindtui.errors import JobLockedError
from mindtui.jobs import lock as lock_module
from mindtui.jobs.lock import WATCH_JOB, JobLock
from mindtui.jobs.runner import run_job
from mindtui.store import open_database
from mindtui.store.notes import note_count


def test_the_next_runs_child_waits_started_and_stop_lets_it_go(live):
    vault, service, events = live
    watcher = start_watching(service, vault, events)
    runner = watcher.runner
    try:
        wait_until(lambda: runner._spare is not None, "a child waiting for the first run")
        spare, started = runner._spare, runner.children
        vault.write("Alpha.md", "# Alpha\n\nNow about wombats.\n")
        wait_until(lambda: fts_paths(service, "wombats") == ["Alpha.md"], "the edit")
        wait_until(lambda: runner._spare is not None and runner._spare is not spare, "the next waiting child")
        assert runner.children == started + 1  # the run was the waiting child's; one more waits now
        waiting = runner._spare
    finally:
        watcher.stop()
    wait_until(lambda: not waiting.running, "the waiting child to exit when the watcher stops")
    assert waiting.wait().ok and waiting.wait().result is None  # dismissed: it ran nothing


def test_while_a_nightly_holds_the_lock_the_watcher_starts_no_child(live, db_path):
    vault, service, events = live
    watcher = start_watching(service, vault, events)
    runner = watcher.runner
    try:
        with JobLock(db_path, "nightly"):
            vault.write("Delta.md", "# Delta\n\nwritten while the nightly runs: capybaras\n")
            wait_until(lambda: watcher.runs >= 5, "five tries while the lock is held")
            assert runner.children <= 1, runner.children  # the one waiting to be told, nothing more
            assert [e.kind for e in events].count("waiting") == 1  # said once, not every retry_s
            assert "nightly" in next(e.detail for e in events if e.kind == "waiting")
        wait_until(lambda: fts_paths(service, "capybaras") == ["Delta.md"], "the import after the lock")
    finally:
        watcher.stop()


def test_an_import_stops_at_its_budget_and_the_next_run_goes_on(vault, db_path, tmp_path):
    for number in range(260):  # more than one write batch: the budget stops the import in between
        vault.write(f"Notes/Note {number:03d}.md", f"# Note {number}\n\nLinks [[Note {(number + 1) % 260:03d}]].\n")
    settings = load_settings().with_values({"jobs": {"import_budget_s": 0.001}})
    reports, written = [], []
    while not reports or reports[-1].get("remaining"):
        result = run_job("index", settings, db_path=db_path, vault=vault.root, steps=["import"])
        assert result.ok, result.as_dict()
        reports.append(result.steps[0].report)
        conn = open_database(db_path)
        written.append(note_count(conn))
        conn.close()
        assert len(reports) < 10
    assert len(reports) >= 2 and written[0] < 260 and written[-1] == 260, written
    run_import(tmp_path / "one-run.db", vault.root)
    assert dump_database(db_path) == dump_database(tmp_path / "one-run.db")  # the same as one whole run


def test_a_watcher_run_that_spends_its_budget_is_followed_by_another(live):
    vault, service, events = live
    service.settings = service.settings.with_values({"watch": {"import_budget_s": 0.001}})
    watcher = start_watching(service, vault, events)
    try:
        for number in range(300):
            vault.write(f"Burst/Note {number:03d}.md", f"# Note {number}\n\nbudgetword{number}\n")
        wait_until(lambda: fts_paths(service, "budgetword299") == ["Burst/Note 299.md"], "the last note")
        wait_until(lambda: fts_paths(service, "budgetword0") == ["Burst/Note 000.md"], "the first note")
        wait_until(lambda: watcher.idle, "the watcher idle")
    finally:
        watcher.stop()
    runs = watch_runs(service)
    assert len(runs) >= 2 and all(run["status"] == "ok" for run in runs), runs


def test_a_holder_that_has_not_written_its_name_yet_is_read_again(db_path, monkeypatch):
    reads = []
    read = lock_module._holder
    monkeypatch.setattr(lock_module, "_holder", lambda fd: reads.append(1) or read(fd))
    monkeypatch.setattr(lock_module, "BUSY_GRACE_S", WAIT_S)  # a loaded box: the waits below are on conditions only
    path = str(db_path) + ".lock"
    db_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)  # taken, the name not written yet
    outcome: list = []

    def nightly() -> None:
        try:
            with JobLock(db_path, "nightly", wait_s=WAIT_S):
                outcome.append("acquired")
        except JobLockedError as exc:
            outcome.append(str(exc))

    thread = threading.Thread(target=nightly)
    thread.start()
    try:
        wait_until(lambda: len(reads) >= 2 or outcome, "the holder read twice")
        os.pwrite(fd, b"4242 watch", 0)  # now it says: the live vault's import, which a nightly waits for
        wait_until(lambda: len(reads) >= 4 or outcome, "the holder read again")
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
        thread.join(WAIT_S)
    assert outcome == ["acquired"]


def test_a_shorter_holder_name_replaces_a_longer_one_whole(db_path, monkeypatch):
    seen = []
    write = os.pwrite
    monkeypatch.setattr(os, "pwrite", lambda fd, data, offset: (write(fd, data, offset), seen.append(
        lock_module._holder(fd)))[0])  # what a reader finds right after the write
    with JobLock(db_path, "a-long-nightly-name"):
        pass
    with JobLock(db_path, WATCH_JOB):
        pass
    assert seen == [(str(os.getpid()), "a-long-nightly-name"), (str(os.getpid()), WATCH_JOB)], seen
