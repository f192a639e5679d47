"""The live vault: a real watcher (watchfiles) over a scratch vault, each import a real job child
(`mindtui --job watch`) under the job lock; what it did is checked through search and job_runs.

Waits poll a condition with a generous deadline (the machine is shared); nothing sleeps a fixed time.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mindtui.audience import Audience
from mindtui.config import load_settings
from mindtui.errors import JobLockedError
from mindtui.jobs.lock import WATCHER_LOCK_SUFFIX, JobLock, holder
from mindtui.jobs.watch import NoteFilter, on_network_file_system
from mindtui.service import SearchOptions, Service

WAIT_S = 90.0


def wait_until(condition, what: str, timeout: float = WAIT_S):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def fts_paths(service: Service, query: str) -> list[str]:
    return [r.path for r in service.search(query, SearchOptions(mode="fts", log=False)).results]


def watch_runs(service: Service) -> list[dict]:
    return [batch for batch in service.job_history(limit=500) if batch["job"] == "watch"]


@pytest.fixture
def live(vault, db_path):
    """An imported scratch vault, its owner's service (no embedding after imports: no model here)
    and a recorder of the watcher's events."""
    vault.write("Alpha.md", "# Alpha\n\nThe first note talks about otters.\n")
    vault.write("Folder/Beta.md", "# Beta\n\nThe second note talks about herons.\n")
    settings = load_settings().with_overrides(db=str(db_path)).with_values(
        {"watch": {"embed": False, "quiet_s": 0.3, "retry_s": 0.2}})
    service = Service(settings, audience=Audience.OWNER)
    assert service.run_job("index", steps=["import"], vault=vault.root).ok
    events: list = []
    yield vault, service, events
    service.close()


def start_watching(service, vault, events, **options):
    watcher = service.watch(events.append, vault=vault.root, catch_up=False, **options)
    assert watcher.wait_ready(WAIT_S)
    return watcher


def test_edit_add_rename_delete_under_a_running_watcher_show_in_search(live):
    vault, service, events = live
    watcher = start_watching(service, vault, events)
    try:
        vault.write("Alpha.md", "# Alpha\n\nThe first note now talks about quokkas.\n")
        wait_until(lambda: fts_paths(service, "quokkas") == ["Alpha.md"], "the edit")
        assert fts_paths(service, "otters") == []

        vault.write("Gamma.md", "# Gamma\n\nA new note about pangolins.\n")
        wait_until(lambda: fts_paths(service, "pangolins") == ["Gamma.md"], "the new note")

        alpha_id = service.note("Alpha.md").note_id
        vault.rename("Alpha.md", "Moved/Alpha renamed.md")
        wait_until(lambda: fts_paths(service, "quokkas") == ["Moved/Alpha renamed.md"], "the rename")
        assert service.note("Moved/Alpha renamed.md").note_id == alpha_id  # the same note, moved

        vault.remove("Folder/Beta.md")
        wait_until(lambda: fts_paths(service, "herons") == [], "the deletion")
    finally:
        watcher.stop()
    imported = [e for e in events if e.kind == "imported"]
    assert imported and all(e.paths for e in imported)
    assert any("Gamma.md" in e.paths for e in imported)


def test_a_burst_of_1000_writes_is_one_import(live):
    vault, service, events = live
    watcher = start_watching(service, vault, events)
    try:
        for number in range(1000):  # a git checkout: many files written back to back
            vault.write(f"Burst/Note {number:04d}.md", f"# Note {number}\n\nburstword{number} text\n")
        wait_until(lambda: fts_paths(service, "burstword999") == ["Burst/Note 0999.md"], "the burst imported")
        wait_until(lambda: watcher.idle, "the watcher idle")
    finally:
        watcher.stop()
    runs = watch_runs(service)
    assert len(runs) == 1, runs
    assert runs[0]["steps"][0]["report"]["notes_added"] == 1000
    assert watcher.runs == 1


def test_a_held_lock_makes_the_watcher_wait_then_it_imports(live, db_path):
    vault, service, events = live
    watcher = start_watching(service, vault, events)
    try:
        with JobLock(db_path, "nightly"):  # the nightly runs: the watcher must not write now
            vault.write("Delta.md", "# Delta\n\nwritten while the nightly runs: capybaras\n")
            wait_until(lambda: any(e.kind == "waiting" for e in events), "the watcher to yield")
            assert fts_paths(service, "capybaras") == []
        wait_until(lambda: fts_paths(service, "capybaras") == ["Delta.md"], "the import after the lock")
    finally:
        watcher.stop()


def test_a_second_watcher_stands_by_until_the_first_stops(live, db_path):
    """Two watchers of one database (a `mindtui watch` service and the TUI): one imports each change,
    the other says once that it stands by, runs nothing, and takes over when the first stops."""
    vault, service, events = live
    first = start_watching(service, vault, events)
    wait_until(lambda: holder(db_path, WATCHER_LOCK_SUFFIX) is not None, "the first watcher's lock")
    second_events: list = []
    second = start_watching(service, vault, second_events)
    try:
        try:
            vault.write("Delta.md", "# Delta\n\nseen by both watchers: capybaras\n")
            wait_until(lambda: fts_paths(service, "capybaras") == ["Delta.md"], "the first watcher's import")
            waiting = wait_until(lambda: [e for e in second_events if e.kind == "waiting"], "the second to stand by")
            assert "another watcher" in waiting[0].detail and "stands by" in waiting[0].detail
            wait_until(lambda: first.idle, "the first watcher idle")
            assert len(watch_runs(service)) == 1 and second.runner.children == 0
        finally:
            first.stop()
        vault.write("Epsilon.md", "# Epsilon\n\nwritten after the first watcher stopped: okapis\n")
        wait_until(lambda: fts_paths(service, "okapis") == ["Epsilon.md"], "the second watcher's import")
    finally:
        second.stop()
    assert len([e for e in second_events if e.kind == "waiting"]) == 1
    assert not [e for e in events + second_events if e.kind == "failed"]


def test_a_job_waits_for_the_watchers_import_and_the_watcher_never_waits(db_path):
    # A nightly finding the live vault's import holding the lock waits for it ...
    held = JobLock(db_path, "watch")
    held.acquire()
    acquired = threading.Event()

    def nightly() -> None:
        with JobLock(db_path, "nightly", wait_s=WAIT_S):
            acquired.set()

    thread = threading.Thread(target=nightly)
    thread.start()
    assert not acquired.wait(0.3)  # still waiting, not failed (the thread is alive)
    assert thread.is_alive()
    held.release()
    thread.join(WAIT_S)
    assert acquired.is_set()
    # ... while the watcher yields at once to a nightly, and a job does not wait for another job.
    with JobLock(db_path, "nightly"):
        with pytest.raises(JobLockedError, match=r"\(nightly\)"):
            JobLock(db_path, "watch", wait_s=WAIT_S).acquire()
        with pytest.raises(JobLockedError):
            JobLock(db_path, "index", wait_s=0.2).acquire()


def test_the_filter_keeps_notes_and_folders_only(tmp_path):
    (tmp_path / "Folder").mkdir()
    notes = NoteFilter(tmp_path, ["Templates/**"])
    assert notes.relative(str(tmp_path / "A.md")) == "A.md"
    assert notes.relative(str(tmp_path / "Folder")) == "Folder"  # a moved folder moves its notes
    assert notes.relative(str(tmp_path / ".obsidian" / "workspace.json")) is None
    assert notes.relative(str(tmp_path / ".trash" / "Old.md")) is None
    assert notes.relative(str(tmp_path / "Templates" / "Daily.md")) is None
    assert notes.relative(str(tmp_path / "image.png")) is None
    assert notes.relative(str(tmp_path / "A.md.swp")) is None
    assert notes.relative(str(tmp_path.parent / "elsewhere.md")) is None


def test_network_file_systems_are_polled(tmp_path):
    mounts = tmp_path / "mounts"
    mounts.write_text("/dev/sda1 / ext4 rw 0 0\nserver:/export /mnt/nas nfs4 rw 0 0\n"
                      "//box/share /mnt/smb\\040share cifs rw 0 0\n")
    assert on_network_file_system(Path("/mnt/nas/Vault"), mounts)
    assert on_network_file_system(Path("/mnt/smb share/Vault"), mounts)
    assert not on_network_file_system(Path("/home/me/Vault"), mounts)
    assert not on_network_file_system(Path("/mnt/nasty"), mounts)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 0)])
def test_mindtui_watch_imports_headless_and_stops_on_a_signal(vault, db_path, signum, code):
    vault.write("Alpha.md", "# Alpha\n\nabout otters\n")
    env = {**os.environ, "MINDTUI_WATCH__EMBED": "false", "MINDTUI_WATCH__QUIET_S": "0.3"}
    process = subprocess.Popen([sys.executable, "-m", "mindtui", "watch", "--vault", str(vault.root), "--db",
                                str(db_path), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=env)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()
    try:
        first = lines.get(timeout=WAIT_S)  # the catch-up run: the whole vault, as after a day away
        assert '"event": "imported"' in first and '"added": 1' in first, first
        vault.write("Beta.md", "# Beta\n\nabout herons\n")
        second = lines.get(timeout=WAIT_S)
        assert '"paths": ["Beta.md"]' in second and '"added": 1' in second, second
        (vault.root / "Beta.md").write_bytes(b"# Beta\n\x00\x01binary now\n")
        third = lines.get(timeout=WAIT_S)
        assert '"paths": ["Beta.md"]' in third and '"deleted": 1' in third, third
        process.send_signal(signum)
        assert process.wait(WAIT_S) == code
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    said = process.stderr.read()
    assert "watching" in said and "warning: Beta.md: binary content" in said, said  # why it left the index


def test_job_children_run_nicer_than_the_front_end(sample_vault, db_path):
    settings = load_settings().with_overrides(db=str(db_path))
    with Service(settings, audience=Audience.OWNER) as service:
        job = service.start_job("index", steps=["import"], vault=sample_vault.root)
        try:
            niceness = os.getpriority(os.PRIO_PROCESS, job.pid)
        finally:
            outcome = job.wait(WAIT_S)
    assert niceness == min(19, os.getpriority(os.PRIO_PROCESS, 0) + settings.jobs.child_nice)
    assert settings.jobs.child_nice > 0 and outcome.ok


def test_the_changed_chunks_are_embedded_in_the_child_in_slices_that_free_the_lock(vault, db_path, real_model):
    for number in range(20):
        vault.write(f"Note {number}.md", f"# Note {number}\n\nThis note talks about animal number {number}.\n")
    settings = load_settings().with_overrides(db=str(db_path)).with_values(
        {"watch": {"quiet_s": 0.3, "embed_budget_s": 0.001}})  # one batch (16 texts) per run
    with Service(settings, audience=Audience.OWNER) as service:
        assert service.run_job("index", steps=["import"], vault=vault.root).ok
        assert service.status()["embedding"]["chunks_with_vector"] == 0
        events: list = []
        watcher = start_watching(service, vault, events)
        try:
            vault.write("Beta.md", "# Beta\n\nA new note about herons and their nests.\n")

            def embedded() -> bool:
                figures = service.status()["embedding"]
                return figures["chunks_with_vector"] == figures["chunks_embeddable"]

            wait_until(embedded, "every chunk embedded")
            wait_until(lambda: watcher.idle, "the watcher idle")
        finally:
            watcher.stop()
        runs = watch_runs(service)
        assert len(runs) >= 2  # the budget stopped a run; the next one went on without a change
        assert all([step["step"] for step in run["steps"]] == ["import", "embed"] for run in runs)
        assert all(step["status"] == "ok" for run in runs for step in run["steps"])


class FlakyRunner:
    """Raises on its first run (no child could start), fails its second, then imports."""

    def __init__(self) -> None:
        self.runs: list[frozenset[str]] = []

    def run(self, paths, imported):
        from mindtui.jobs.watch import RunOutcome

        self.runs.append(paths)
        if len(self.runs) == 1:
            raise OSError(24, "Too many open files")
        if len(self.runs) == 2:
            return RunOutcome("failed", "database is busy")
        imported({})
        return RunOutcome("ok")

    def cancel(self) -> None:
        return None


def test_a_run_that_raises_or_fails_keeps_its_changes_and_the_watcher_goes_on(vault):
    from mindtui.jobs.watch import VaultWatcher

    vault.write("Alpha.md", "# Alpha\n")
    settings = load_settings().with_values({"watch": {"embed": False, "quiet_s": 0.1, "retry_s": 0.05}})
    runner, events = FlakyRunner(), []
    watcher = VaultWatcher(vault.root, settings, runner, events.append, catch_up=False)
    watcher.start()
    try:
        assert watcher.wait_ready(WAIT_S)
        vault.write("Beta.md", "# Beta\n")
        wait_until(lambda: any(e.kind == "done" for e in events), "a run after two failures")
    finally:
        watcher.stop()
    assert len(runner.runs) == 3 and all("Beta.md" in batch for batch in runner.runs)  # the same change, kept
    failures = [e.detail for e in events if e.kind == "failed"]
    assert "Too many open files" in failures[0] and failures[1] == "database is busy"


def test_mindtui_watch_exits_1_when_the_watch_gives_up(vault, db_path, tmp_path):
    """A watch that fails for good (polling failed too; the watcher library missing or broken) is a
    `failed` line and exit 1: the process went on, watching nothing, until it was killed."""
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "watchfiles.py").write_text(
        "def watch(*args, **kwargs):\n    raise RuntimeError('OS file watch limit reached')\n", encoding="utf-8")
    vault.write("Alpha.md", "# Alpha\n")
    env = {**os.environ, "MINDTUI_WATCH__EMBED": "false", "PYTHONPATH": str(broken)}
    process = subprocess.run([sys.executable, "-m", "mindtui", "watch", "--vault", str(vault.root), "--db",
                              str(db_path), "--polling"], capture_output=True, text=True, env=env, timeout=WAIT_S)
    assert process.returncode == 1
    assert "the vault is not watched any more: OS file watch limit reached" in process.stderr
    assert "Traceback" not in process.stderr
