"""The live vault against what real vaults, editors and sync tools do: the vault folder replaced
or deleted under the watch, files that never stop changing, a reader of `mindtui watch` that goes
away. A real watcher (watchfiles) and real job children over a scratch vault and SQLite file;
waits poll conditions (see test_watch.wait_until)."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
import threading

import pytest
from test_watch import WAIT_S, fts_paths, live, start_watching, wait_until, watch_runs  # noqa: F401 (fixture)

from mindtui.config import load_settings
from mindtui.jobs.runner import run_job
from mindtui.store import open_database
from mindtui.store.jobs import recent_batches


def test_a_vault_folder_replaced_under_the_watch_is_watched_again(live):
    """A sync tool or a restore moves the vault away and puts a new folder in its place: kernel
    events followed the old folder, so nothing written to the new one was ever imported."""
    vault, service, events = live
    watcher = start_watching(service, vault, events)
    try:
        vault.root.rename(vault.root.with_name("vault-old"))
        vault.write("Alpha.md", "# Alpha\n\nThe first note talks about otters.\n")
        vault.write("Restored.md", "# Restored\n\nbrought back by the sync: narwhals\n")
        wait_until(lambda: fts_paths(service, "narwhals") == ["Restored.md"], "the new folder's catch-up")
        vault.write("Later.md", "# Later\n\nwritten into the new folder: axolotls\n")
        wait_until(lambda: fts_paths(service, "axolotls") == ["Later.md"], "a change in the new folder")
    finally:
        watcher.stop()


def test_a_deleted_vault_is_waited_for_without_failing_runs(live):
    vault, service, events = live
    watcher = start_watching(service, vault, events)
    try:
        shutil.rmtree(vault.root)
        wait_until(lambda: any("is gone" in e.detail for e in events), "the vault said gone")
        vault.write("Alpha.md", "# Alpha\n\nThe first note talks about otters.\n")
        vault.write("Folder/Beta.md", "# Beta\n\nThe second note talks about herons.\n")
        vault.write("Back.md", "# Back\n\nthe vault is back: manatees\n")
        wait_until(lambda: fts_paths(service, "manatees") == ["Back.md"], "the catch-up once it is back")
        wait_until(lambda: watcher.idle, "the watcher idle")
    finally:
        watcher.stop()
    assert [e.detail for e in events if e.kind == "failed" and "is gone" not in e.detail] == []
    assert all(run["status"] == "ok" for run in watch_runs(service)), watch_runs(service)
    assert fts_paths(service, "otters") == ["Alpha.md"]  # nothing was deleted while it was away


def test_a_note_written_over_and_over_does_not_hold_back_the_other_changes(live):
    """A log note or a plugin's counter written again as soon as the last write was seen: the quiet
    time never came, so no other change was imported while it went on."""
    vault, service, events = live
    service.settings = service.settings.with_values({"watch": {"max_wait_s": 1.0}})
    watcher = start_watching(service, vault, events)
    done = threading.Event()

    def log_writer() -> None:
        for line in itertools.count():
            if done.is_set():
                return
            vault.write("Log.md", f"# Log\n\nentry {line}\n")
            wait_until(lambda: "Log.md" in watcher._pending or done.is_set(), "the log write seen")

    writer = threading.Thread(target=log_writer)
    writer.start()
    try:
        wait_until(lambda: "Log.md" in watcher._pending, "the log being written")
        vault.write("Gamma.md", "# Gamma\n\nA new note about pangolins.\n")
        wait_until(lambda: fts_paths(service, "pangolins") == ["Gamma.md"], "the note next to the log")
    finally:
        done.set()
        writer.join()
        watcher.stop()


def test_folders_are_told_from_files_by_what_is_on_disk_not_by_a_dot_in_the_name(live):
    """A folder named "v1.2" renamed, or moved to Obsidian's .trash, was taken for an attachment and
    ignored (its notes kept their old paths); a file without an extension (vim's `4913` probe, a
    `LOG`) was taken for a folder and made a run of its own."""
    vault, service, events = live
    vault.write("Release v1.2/Plan.md", "# Plan\n\nthe release plan mentions lemurs\n")
    vault.write("Dr. Smith/Visit.md", "# Visit\n\nthe visit mentions tapirs\n")
    assert service.run_job("index", steps=["import"], vault=vault.root).ok
    watcher = start_watching(service, vault, events)
    try:
        vault.rename("Release v1.2", "Release v1.3")
        wait_until(lambda: fts_paths(service, "lemurs") == ["Release v1.3/Plan.md"], "the dotted folder renamed")
        vault.rename("Dr. Smith", ".trash/Dr. Smith")  # how Obsidian deletes a folder
        wait_until(lambda: fts_paths(service, "tapirs") == [], "the dotted folder trashed")
        vault.write("LOG", "a tool's log, not a note\n")
        vault.write("Gamma.md", "# Gamma\n\nA new note about pangolins.\n")
        wait_until(lambda: fts_paths(service, "pangolins") == ["Gamma.md"], "the new note")
    finally:
        watcher.stop()
    assert all("LOG" not in e.paths for e in events if e.kind == "imported"), events


def test_mindtui_watch_ends_quietly_when_its_reader_goes_away(vault, db_path):
    """`mindtui watch --json | head -1`: the next line found the pipe closed, which was taken for a
    failed import; the run was tried again and again, and the watch never ended."""
    vault.write("Alpha.md", "# Alpha\n\nabout otters\n")
    env = {**os.environ, "MINDTUI_WATCH__EMBED": "false", "MINDTUI_WATCH__QUIET_S": "0.3"}
    process = subprocess.Popen([sys.executable, "-m", "mindtui", "watch", "--vault", str(vault.root), "--db",
                                str(db_path), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=env)
    try:
        assert '"event": "imported"' in process.stdout.readline()  # what `head -1` reads, then it exits
        process.stdout.close()
        vault.write("Beta.md", "# Beta\n\nabout herons\n")
        wait_until(lambda: process.poll() is not None, "the watch to end")
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(WAIT_S)
    stderr = process.stderr.read()
    assert process.returncode == 0, stderr
    assert "could not run" not in stderr and "Traceback" not in stderr, stderr


@pytest.mark.parametrize("polling", [False, True])
def test_a_file_name_that_is_not_utf8_does_not_end_the_watch(live, polling):
    """A change to such a file (an old zip, a Samba share; the import skips it with a warning) made
    watchfiles raise: kernel events fell back to polling, and polling gave up: nothing was watched."""
    vault, service, events = live
    service.settings = service.settings.with_values({"watch": {"poll_interval_ms": 100}})
    watcher = start_watching(service, vault, events, force_polling=polling)
    try:
        odd = os.path.join(os.fsencode(vault.root), b"caf\xe9.md")
        with open(odd, "wb") as handle:
            handle.write(b"# Cafe\n\nits name is Latin-1\n")
        wait_until(lambda: any("Unable to decode" in e.detail for e in events), "the change seen")
        vault.write("Gamma.md", "# Gamma\n\nA new note about pangolins.\n")
        wait_until(lambda: fts_paths(service, "pangolins") == ["Gamma.md"], "a change after it")
    finally:
        watcher.stop()
    assert [e.detail for e in events if e.kind == "watching"] == [
        f"watching {vault.root} ({'polling' if polling else 'file system events'})"]  # the same watch, not a fallback
    assert any("not UTF-8 and is not imported, rename it" in e.detail for e in events)


def test_the_job_history_keeps_the_last_watch_runs_only(vault, db_path):
    """A run per burst of edits (an autosave every 2 s while typing, a log note every max_wait_s),
    each ~1.3 KB of report per step, was kept for retention.job_runs_days (365): gigabytes a year."""
    vault.write("Alpha.md", "# Alpha\n")
    settings = load_settings().with_values({"retention": {"watch_runs": 3}})
    assert run_job("index", settings, db_path=db_path, vault=vault.root, steps=["import"]).ok
    for number in range(5):
        vault.write("Alpha.md", f"# Alpha\n\nedit {number}\n")
        assert run_job("watch", settings, db_path=db_path, vault=vault.root, steps=["import"]).ok
    conn = open_database(db_path)
    try:
        jobs = [batch[0].job for batch in recent_batches(conn, 100)]
    finally:
        conn.close()
    assert jobs == ["watch"] * 3 + ["index"], jobs  # the newest first; other jobs' history is not touched


def test_a_refused_mass_deletion_is_said_once_and_the_next_changes_come_at_once(live):
    """Deleting a big folder (more than import.max_delete_fraction of the notes) is refused until the
    user says so; the watcher took the refusal for a failure that may pass: it ran the import again
    and again, each try waiting twice as long (up to 64 x watch.retry_s, 5 min), and every later
    edit waited that long too."""
    vault, service, events = live
    for number in range(8):
        vault.write(f"Archive/Old {number}.md", f"# Old {number}\n\nan archived note about dodos\n")
    assert service.run_job("index", steps=["import"], vault=vault.root).ok
    watcher = start_watching(service, vault, events)
    try:
        vault.rename("Archive", ".trash/Archive")  # Obsidian's delete
        wait_until(lambda: any("refusing to delete 8 of 10" in e.detail for e in events), "the refusal")
        wait_until(lambda: watcher.idle, "the watcher idle, not trying again")
        runs = watcher.runs
        vault.write("Gamma.md", "# Gamma\n\nA new note about pangolins.\n")
        wait_until(lambda: fts_paths(service, "pangolins") == ["Gamma.md"], "the next change")
        wait_until(lambda: watcher.idle, "the watcher idle again")
    finally:
        watcher.stop()
    assert watcher.runs == runs + 1
    assert [e.kind for e in events if "refusing" in e.detail] == ["failed"]  # said once (8 of 10 both times)
    assert any(e.kind == "imported" and "Archive" in e.paths for e in events)  # the rest of the run is in
    assert len(fts_paths(service, "dodos")) == 8  # kept until the user says they are gone


def test_mindtui_watch_without_a_stderr_keeps_stdout_to_its_results(vault, db_path):
    """Started with stderr closed (`2>&-`, a careless unit file), every diagnostic went to stdout
    among the JSON lines (print() with no stderr writes to stdout)."""
    vault.write("Alpha.md", "# Alpha\n\nabout otters\n")
    env = {**os.environ, "MINDTUI_WATCH__EMBED": "false", "MINDTUI_WATCH__QUIET_S": "0.3"}
    process = subprocess.Popen(["sh", "-c", 'exec "$@" 2>&-', "sh", sys.executable, "-m", "mindtui", "watch", "--vault",
                                str(vault.root), "--db", str(db_path), "--json"], stdout=subprocess.PIPE, text=True,
                               env=env)
    try:
        first = process.stdout.readline()  # the catch-up run's line, after `watching` and before `done`
        vault.write("Beta.md", "# Beta\n\nabout herons\n")
        second = process.stdout.readline()
        process.terminate()
        assert process.wait(WAIT_S) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    lines = [first, second, *process.stdout.read().splitlines()]
    assert [json.loads(line)["event"] for line in lines] == ["imported", "imported"], lines


def test_a_child_that_cannot_start_ahead_does_not_cost_the_watch(live, monkeypatch):
    """The next run's child is started ahead from the watch's thread; an OSError there (too many
    open files, no memory for a fork) was taken for the file system watch failing: kernel events
    were given up for polling, and the next such error ended the watch."""
    from mindtui.service import job_process

    vault, service, events = live
    popen, starts = job_process.subprocess.Popen, []

    def exhausted_once(*args, **kwargs):
        starts.append(1)
        if len(starts) == 1:
            raise OSError(24, "Too many open files")
        return popen(*args, **kwargs)

    monkeypatch.setattr(job_process.subprocess, "Popen", exhausted_once)
    watcher = start_watching(service, vault, events)
    try:
        wait_until(lambda: starts, "the child started ahead")
        vault.write("Gamma.md", "# Gamma\n\nA new note about pangolins.\n")
        wait_until(lambda: fts_paths(service, "pangolins") == ["Gamma.md"], "the change")
    finally:
        watcher.stop()
    assert [e.detail for e in events if e.kind in ("watching", "failed")] == [
        f"watching {vault.root} (file system events)"]


def test_an_embedding_that_fails_is_said_once_and_does_not_slow_the_imports(live, tmp_path):
    """A model that cannot load failed every run's embed step after its import had reached the
    index: the run was tried again and again with a doubling wait, and each later edit waited it out."""
    vault, service, events = live
    service.settings = service.settings.with_values(
        {"watch": {"embed": True}, "models": {"embedding_path": str(tmp_path / "missing.gguf")}})
    watcher = start_watching(service, vault, events)
    try:
        for name, word in (("Gamma.md", "pangolins"), ("Delta.md", "capybaras")):
            vault.write(name, f"# {name[:-3]}\n\nA new note about {word}.\n")
            wait_until(lambda: fts_paths(service, word) == [name], f"{name} imported")  # noqa: B023 (used at once)
            wait_until(lambda: watcher.idle, "the watcher idle, not trying again")
    finally:
        watcher.stop()
    assert watcher.runs == 2
    assert [e.kind for e in events if "missing.gguf" in e.detail] == ["failed"]  # said once


def test_mindtui_watch_on_a_database_it_can_never_write_exits_4_at_once(vault, tmp_path):
    """A file that is not a mindtui database (or a newer schema, a read-only setting) failed every
    run for good: the watch went on retrying for ever instead of exiting 4 like any other command."""
    vault.write("Alpha.md", "# Alpha\n")
    not_a_database = tmp_path / "notes.db"
    not_a_database.write_text("a text file, not SQLite\n", encoding="utf-8")
    env = {**os.environ, "MINDTUI_WATCH__EMBED": "false"}
    process = subprocess.run([sys.executable, "-m", "mindtui", "watch", "--vault", str(vault.root), "--db",
                              str(not_a_database)], capture_output=True, text=True, env=env, timeout=WAIT_S)
    assert process.returncode == 4, process.stderr
    assert process.stderr.strip().splitlines() == [
        f"mindtui: {not_a_database}: not a SQLite database (file is not a database)"]
