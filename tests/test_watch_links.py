"""What the live vault's watch takes from the machine: no inotify watch behind a symlink out of
the vault, and no long wait once a failing run may succeed again.

Real watchers (watchfiles on inotify) with a recording runner: what a run would be given is
what is asserted. The kernel's own count of a watch's inotify watches is read from /proc."""

from __future__ import annotations

import os
import shutil
import time

from test_watch import WAIT_S, wait_until

from mindtui.config import load_settings
from mindtui.jobs.watch import CATCH_UP, RunOutcome, VaultWatcher


class RecordingRunner:
    """Records what each run is given; fails its first `failing` runs."""

    def __init__(self, failing: int = 0) -> None:
        self.runs: list[frozenset[str]] = []
        self.failing = failing

    def run(self, paths, imported):
        self.runs.append(paths)
        if len(self.runs) <= self.failing:
            return RunOutcome("failed", "database or disk is full")
        imported({})
        return RunOutcome("ok")

    def cancel(self) -> None:
        return None

    def given(self, path: str) -> bool:
        return any(path in run for run in self.runs)


def inotify_watches() -> int:
    """The inotify watches this process holds (each folder a recursive watch follows is one)."""
    total = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") != "anon_inode:inotify":
                continue
            with open(f"/proc/self/fdinfo/{fd}", encoding="ascii") as info:
                total += sum(line.startswith("inotify wd:") for line in info)
        except OSError:  # an fd closed while it was looked at
            continue
    return total


def settings_for(db_path, **watch):
    return load_settings().with_overrides(db=str(db_path)).with_values(
        {"watch": {"embed": False, "quiet_s": 0.1, "retry_s": 0.1, "polling": "never", **watch}})


def big_folder(root, folders: int = 40):
    for number in range(folders):
        (root / f"sub{number}" / "deeper").mkdir(parents=True)
    return root


def vault_folders(vault_root) -> int:
    """The vault and its real, non-dot folders: what a watch folder by folder holds."""
    count = 1
    for current, names, _ in os.walk(vault_root):
        names[:] = [n for n in names if not n.startswith(".") and not os.path.islink(os.path.join(current, n))]
        count += len(names)
    return count


def test_a_symlink_out_of_the_vault_is_not_watched_and_the_vault_still_is(vault, db_path, tmp_path):
    """A link to a big folder outside the vault (~/Documents, /usr) cost an inotify watch per folder
    behind it (the import does not even follow it), until the kernel's limit was reached."""
    vault.write("Alpha.md", "# Alpha\n")
    vault.write("Folder/Beta.md", "# Beta\n")
    outside = big_folder(tmp_path / "outside")
    (vault.root / "Elsewhere").symlink_to(outside, target_is_directory=True)
    (vault.root / "Again").symlink_to(vault.root / "Folder", target_is_directory=True)  # inside: fine
    runner, events = RecordingRunner(), []
    watcher = VaultWatcher(vault.root, settings_for(db_path), runner, events.append, catch_up=False).start()
    try:
        assert watcher.wait_ready(WAIT_S)
        assert inotify_watches() == vault_folders(vault.root)  # "Again" is Folder: one inode, one watch
        assert any("not following 1 symlink(s) out of the vault" in e.detail for e in events)
        vault.write("Folder/Gamma.md", "# Gamma\n")
        wait_until(lambda: runner.given("Folder/Gamma.md"), "a change in a watched folder")
        (outside / "sub3" / "Hidden.md").write_text("# not the vault's\n", encoding="utf-8")
        (vault.root / "New").mkdir()  # a new folder: watched once the watch is placed again
        wait_until(lambda: inotify_watches() == vault_folders(vault.root), "the new folder watched")
        vault.write("New/Delta.md", "# Delta\n")
        wait_until(lambda: runner.given("New/Delta.md"), "a note in the new folder")
        shutil.rmtree(vault.root / "Folder")  # a folder gone: placed again without it
        wait_until(lambda: runner.given("Folder"), "the deleted folder")
        wait_until(lambda: inotify_watches() == vault_folders(vault.root), "the watch without the folder")
        vault.write("New/Eta.md", "# Eta\n")
        wait_until(lambda: runner.given("New/Eta.md"), "a change after the folder went")
    finally:
        watcher.stop()
    assert not any(path.startswith("Elsewhere") for run in runner.runs for path in run)
    assert [e.detail for e in events if e.kind == "failed"] == []  # never fell back to polling


def test_a_link_out_made_while_watching_is_let_go(vault, db_path, tmp_path):
    vault.write("Alpha.md", "# Alpha\n")
    outside = big_folder(tmp_path / "outside")
    runner, events = RecordingRunner(), []
    watcher = VaultWatcher(vault.root, settings_for(db_path), runner, events.append, catch_up=False).start()
    try:
        assert watcher.wait_ready(WAIT_S)
        assert inotify_watches() == vault_folders(vault.root)
        (vault.root / "Elsewhere").symlink_to(outside, target_is_directory=True)
        wait_until(lambda: any("not following 1 symlink" in e.detail for e in events), "the watch placed again")
        wait_until(lambda: runner.given(CATCH_UP) and watcher.idle, "the catch-up once it is placed again")
        assert inotify_watches() == vault_folders(vault.root)  # none behind the link
        vault.write("Beta.md", "# Beta\n")
        wait_until(lambda: runner.given("Beta.md"), "a change after the watch was placed again")
    finally:
        watcher.stop()


def test_a_link_out_in_a_dot_folder_is_not_followed_either(vault, db_path, tmp_path):
    """A plugin developer's `.obsidian/plugins/dev` -> ~/code/plugin: dot folders hold no notes,
    but a recursive watch followed the link into the whole checkout."""
    vault.write("Alpha.md", "# Alpha\n")
    (vault.root / ".obsidian" / "plugins").mkdir(parents=True)
    (vault.root / ".obsidian" / "plugins" / "dev").symlink_to(big_folder(tmp_path / "code"), target_is_directory=True)
    runner, events = RecordingRunner(), []
    watcher = VaultWatcher(vault.root, settings_for(db_path), runner, events.append, catch_up=False).start()
    try:
        assert watcher.wait_ready(WAIT_S)
        assert inotify_watches() == vault_folders(vault.root)  # the vault alone: no dot folder either
        (vault.root / ".obsidian" / "plugins" / "other").symlink_to(tmp_path / "code", target_is_directory=True)
        # Not seen as it is made (dot folders are not watched): the look once the watch is in
        # place finds it, or the next placement does.
        vault.write("Folder/Gamma.md", "# Gamma\n")  # a new folder: the watch is placed again
        wait_until(lambda: any("not following 2 symlink" in e.detail for e in events), "the new link found")
        wait_until(lambda: runner.given(CATCH_UP) and watcher.idle, "the catch-up once it is placed again")
        assert inotify_watches() == vault_folders(vault.root)
        vault.write("Beta.md", "# Beta\n")
        wait_until(lambda: runner.given("Beta.md"), "a change beside the dot folder")
    finally:
        watcher.stop()


def test_a_link_out_is_watched_where_the_import_follows_it(vault, db_path, tmp_path):
    vault.write("Alpha.md", "# Alpha\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (vault.root / "Elsewhere").symlink_to(outside, target_is_directory=True)
    runner = RecordingRunner()
    settings = settings_for(db_path).with_values({"import": {"follow_external_symlinks": True}})
    watcher = VaultWatcher(vault.root, settings, runner, catch_up=False).start()
    try:
        assert watcher.wait_ready(WAIT_S)
        (outside / "Linked.md").write_text("# Linked\n", encoding="utf-8")
        wait_until(lambda: runner.given("Elsewhere/Linked.md"), "a change behind a followed link")
    finally:
        watcher.stop()


def test_an_edit_after_failed_runs_is_tried_without_waiting_out_the_doubled_delay(vault, db_path):
    """After a full disk or a busy database the wait doubles up to 64x retry_s; once the user has
    made room and edits, that edit waited out the whole delay."""
    vault.write("Alpha.md", "# Alpha\n")
    runner = RecordingRunner(failing=1)
    watcher = VaultWatcher(vault.root, settings_for(db_path, retry_s=60.0), runner, catch_up=False).start()
    try:
        assert watcher.wait_ready(WAIT_S)
        vault.write("Beta.md", "# Beta\n")
        wait_until(lambda: watcher._failures == 1, "the failed run")
        with watcher._cond:  # a long failing streak: the next try is 64 x retry_s away
            watcher._failures, watcher._due, watcher._tried = 6, time.monotonic() + 3840.0, time.monotonic() - 60.0
        vault.write("Gamma.md", "# Gamma\n")
        wait_until(lambda: runner.given("Gamma.md"), "the edit tried at once")
    finally:
        watcher.stop()
    assert {"Beta.md", "Gamma.md"} <= runner.runs[1]  # the failed run's changes came along
