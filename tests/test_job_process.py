"""Jobs in a child process: `mindtui --job ... --progress json` and the JobProcess that watches it.

The real CLI runs in a child process. To cancel at a known moment, the type registry is a
FIFO: the import step opens it first thing and blocks there until the test writes it, so the
child is provably inside a running import (holding the job lock) while the test cancels it
and starts a second job. No sleeps, no timing.
"""

from __future__ import annotations

import io
import json
import os
import signal
import threading
from pathlib import Path

import pytest
from test_watch import wait_until

from mindtui.config import CONFIG_FILE_ENV, load_settings
from mindtui.console import JsonProgress, summary_report
from mindtui.locations import bundled_config_file
from mindtui.service import Audience, NotAllowed, Service
from mindtui.service.job_process import JobProcess, discard_job_config, parse_line
from mindtui.store import jobs as job_store
from mindtui.store import open_database

NOTES = 40
WAIT = 120  # seconds: only a guard against a hung child, never a synchronisation


@pytest.fixture
def small_vault(vault):
    for i in range(NOTES):
        vault.write(f"notes/n{i:03}.md", f"---\ntitle: Note {i}\n---\n# Note {i}\n\nAbout [[n{(i + 1) % NOTES:03}]].\n")
    return vault


def owner(db_path: Path, **values) -> Service:
    return Service(load_settings().with_overrides(db=str(db_path), **values), audience=Audience.OWNER)


def until(events, kind: str, **match) -> tuple[dict, list[dict]]:
    """Read events up to the first of `kind` (with these fields); returns it and all read."""
    seen = []
    for event in events:
        seen.append(event)
        if event["event"] == kind and all(event.get(k) == v for k, v in match.items()):
            return event, seen
        assert event["event"] != "exit", f"ended before a {kind} event: {seen}"
    raise AssertionError(f"no {kind} event: {seen}")


def kinds(events: list[dict]) -> list[str]:
    """Event kinds in order, runs of progress events folded into one."""
    out: list[str] = []
    for event in events:
        if not (event["event"] == "progress" and out and out[-1] == "progress"):
            out.append(event["event"])
    return out


def test_events_arrive_in_order_with_the_vaults_counts(small_vault, db_path):
    with owner(db_path) as service:
        job = service.start_job("nightly", steps=["import", "graph"], vault=small_vault.root)
        events = list(job.events(timeout=WAIT))
        outcome = job.wait(WAIT)
    assert kinds(events) == ["start", "step", "progress", "step_done", "step", "message", "step_done", "result",
                             "exit"]
    start = events[0]
    assert start["job"] == "nightly" and start["steps"] == ["import", "graph"] and start["pid"] == job.pid
    progress = [e for e in events if e["event"] == "progress"]
    assert progress[-1]["done"] == progress[-1]["total"] == NOTES  # the step's last report always comes
    assert all(e["step"] == "import" and set(e) >= {"detail", "rate", "eta_s"} for e in progress)
    done = [e for e in events if e["event"] == "step_done"]
    assert [(e["step"], e["status"], e["error"]) for e in done] == [("import", "ok", None), ("graph", "ok", None)]
    assert done[0]["report"]["notes_total"] == done[0]["report"]["notes_added"] == NOTES
    assert done[0]["report"]["wikilink_total"] == NOTES
    assert "no work log" in next(e["text"] for e in events if e["event"] == "message")
    assert not any(e["event"] == "log" for e in events), events
    assert outcome.ok and not outcome.locked and not outcome.cancelled and outcome.returncode == 0
    assert outcome.result["ok"] is True and outcome.result["batch_id"] == start["batch_id"]
    assert [s["status"] for s in outcome.result["steps"]] == ["ok", "ok"]
    assert outcome.output["steps"][0]["report"]["notes_total"] == NOTES  # stdout: the CLI's --json result
    assert events[-1] == outcome.as_event() and not job.running


def blocked_opening_fifo(pid: int) -> bool:
    """True once the process sleeps in open(2) of a FIFO no one writes yet. Linux says so in
    /proc: the kernel function it waits in, or the system call it is blocked in. True at once
    where the kernel does not say (no /proc, or neither file readable)."""
    def first_word(name: str) -> str | None:
        try:
            return (Path(f"/proc/{pid}") / name).read_text().split()[0]
        except (OSError, IndexError):
            return None

    where, blocked_in = first_word("wchan"), first_word("syscall")  # blocked_in: "running" or a number
    if where is None and blocked_in is None:
        return True
    return where in {"wait_for_partner", "fifo_open"} or blocked_in in {"2", "257", "56"}  # open, openat (x86-64, arm64)


def cancelled_run(service: Service, vault_root: Path, fifo: Path, how: str, while_blocked=None) -> tuple:
    """Start an index job, cancel it inside the import step (blocked on the FIFO types file)."""
    job = service.start_job("index", vault=vault_root)
    events = job.events(timeout=WAIT)
    until(events, "step", step="import")
    # A signal that lands just before the child enters open(2) is handled only once open returns,
    # which the FIFO never lets it do: signal the child once it sleeps inside the open.
    wait_until(lambda: blocked_opening_fifo(job.pid), "the child to block opening the FIFO")
    if how == "cancel":
        job.cancel()
    else:
        os.kill(job.pid, signal.SIGTERM)
    until(events, "message", cancelling=True)  # the child's cancel token is set
    during = while_blocked() if while_blocked else None
    writer = threading.Thread(target=fifo.write_text,
                              args=(bundled_config_file("types.yaml").read_text(encoding="utf-8"),), daemon=True)
    writer.start()
    try:
        step_done, rest = until(events, "step_done", step="import")
        tail = list(events)
    finally:
        if writer.is_alive():  # the child never opened the FIFO: let the writer's open go through
            os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
        writer.join(WAIT)
    return job, step_done, rest + tail, during


@pytest.mark.parametrize("how", ["cancel", "sigterm"])
def test_a_running_import_is_cancelled_at_a_safe_point(small_vault, db_path, tmp_path, how):
    fifo = tmp_path / "types.fifo"
    os.mkfifo(fifo)

    def meanwhile():
        with owner(db_path) as reader:  # another process holds the lock and is inside its step
            second = reader.start_job("index", vault=small_vault.root)
            history = reader.job_history()
        return second.wait(WAIT), list(second.events(timeout=WAIT)), history

    with owner(db_path, types_file=str(fifo)) as service:
        job, step_done, events, (locked, locked_events, history) = cancelled_run(
            service, small_vault.root, fifo, how, meanwhile)
        outcome = job.wait(WAIT)
    assert step_done["status"] == "cancelled" and "cancelled" in step_done["error"]
    assert kinds(events)[-2:] == ["result", "exit"]
    assert outcome.returncode == 130 and outcome.cancelled and not outcome.ok
    assert outcome.result["cancelled"] is True and outcome.result["steps"][0]["status"] == "cancelled"
    # the second job found the lock: nothing ran, and the outcome says why
    assert locked.locked and locked.returncode == 3 and "already running" in locked.error
    assert [e["event"] for e in locked_events] == ["error", "exit"] and locked_events[-1]["locked"] is True
    # the history was readable while the job ran, and shows it running
    assert history[0]["job"] == "index" and history[0]["status"] == "running"
    assert [(s["step"], s["status"]) for s in history[0]["steps"]] == [("import", "running")]

    with owner(db_path) as service:
        again = service.start_job("index", vault=small_vault.root).wait(WAIT)
        history = service.job_history()
    assert again.ok and again.result["steps"][0]["report"]["notes_total"] == NOTES
    assert [(h["job"], h["status"], [s["status"] for s in h["steps"]]) for h in history] == [
        ("index", "ok", ["ok"]), ("index", "cancelled", ["cancelled"])]
    assert history[0]["seconds"] is not None and history[0]["steps"][0]["report"]["notes_added"] == NOTES
    assert history[1]["batch_id"] == outcome.result["batch_id"]
    conn = open_database(db_path)
    try:
        assert [r.status for r in reversed(job_store.recent_runs(conn))] == ["cancelled", "ok"]
    finally:
        conn.close()


def test_an_error_before_the_job_is_an_event_and_the_outcome_says_it(db_path, vault):
    with owner(db_path) as service:
        job = service.start_job("nightly", steps=["import", "nonsense"], vault=vault.root)
        outcome = job.wait(WAIT)
        events = list(job.events(timeout=WAIT))
        with Service(service.settings, audience=Audience.AGENT) as agent, pytest.raises(NotAllowed):
            agent.start_job("index")
    assert outcome.returncode == 5 and "nonsense" in outcome.error and outcome.result is None
    assert [e["event"] for e in events] == ["error", "exit"]


def test_callback_receives_events_from_the_reader_thread(small_vault, db_path):
    got: list[dict] = []
    with owner(db_path) as service:
        job = service.start_job("index", vault=small_vault.root, on_event=got.append)
        outcome = job.wait(WAIT)
        with pytest.raises(RuntimeError):
            next(job.events())
    assert outcome.ok and got[0]["event"] == "start" and got[-1]["event"] == "exit"


def test_json_progress_throttles_and_always_sends_a_steps_last_report():
    now = [0.0]
    stream = io.StringIO()
    progress = JsonProgress(stream, interval=0.1, clock=lambda: now[0])
    progress.step_started("import")
    for done in range(1, 6):  # five reports within one interval: the first goes out, the rest wait
        progress("import", done, 10, f"n{done}")
    now[0] = 1.0
    progress("import", 6, 10, "n6")  # an interval later: out, with a rate from the first report on
    progress("import", 7, 10, "n7")  # held back, then sent before step_done
    progress.step_finished(type("R", (), {"step": "import", "status": "cancelled", "error": "stop",
                                          "report": {"warnings": [{"path": str(i)} for i in range(25)], "n": 3},
                                          "run_id": 7})())
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [(e["event"], e.get("done")) for e in lines] == [
        ("step", None), ("progress", 1), ("progress", 6), ("progress", 7), ("step_done", None)]
    assert lines[1]["rate"] is None and lines[2]["rate"] == 5.0 and lines[2]["eta_s"] == 0.8
    assert lines[-1]["report"]["n"] == 3 and lines[-1]["report"]["warnings_total"] == 25 and lines[-1]["run_id"] == 7
    assert len(lines[-1]["report"]["warnings"]) == 10


def test_summary_report_keeps_counts_and_cuts_long_lists_and_texts():
    report = summary_report({"a": 1, "logs": ["x"], "nested": {"items": list(range(30))}, "traceback": "t" * 5000})
    assert report["a"] == 1 and report["logs"] == ["x"]
    assert report["nested"] == {"items": list(range(10)), "items_total": 30}
    assert len(report["traceback"]) < 2100


def test_lines_that_are_not_events_become_log_events():
    assert parse_line('{"event": "step", "step": "import"}\n') == {"event": "step", "step": "import"}
    assert parse_line("Traceback (most recent call last):\n") == {"event": "log",
                                                                   "text": "Traceback (most recent call last):"}
    assert parse_line('{"not": "an event"}') == {"event": "log", "text": '{"not": "an event"}'}
    assert parse_line("{broken") == {"event": "log", "text": "{broken"}


def test_a_waiting_child_deletes_its_settings_file_once_read(db_path, vault, tmp_path):
    # A parent killed while its warm child waits would otherwise leave the user's settings in /tmp.
    with owner(db_path) as service:
        job = JobProcess(service.settings, "index", vault=vault.root, when_told=True)
        config = job._config
        try:
            wait_until(lambda: not config.exists(), "the child to delete its settings file")
            assert job.running  # still waiting to be told
        finally:
            job.dismiss()
        assert job.wait(WAIT).ok and job.wait().result is None  # dismissed: the parent's delete found it gone
    mine = tmp_path / "mindtui-job-mine.yaml"  # a user's own config file, even named so, stays
    mine.write_text("search:\n  default_limit: 7\n", encoding="utf-8")
    discard_job_config({CONFIG_FILE_ENV: str(mine)})
    assert mine.exists()
