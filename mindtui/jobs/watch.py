"""The live vault: watch a vault folder and import what changed, debounced.

Two threads. One follows the file system with watchfiles (a maintained watcher on the Rust
`notify` crate: inotify, FSEvents, ReadDirectoryChangesW, or polling, which is what a network
file system needs: there the kernel sees no remote change) and collects the vault-relative paths
of changed notes. The other waits until no change has come for `watch.quiet_s`, then hands the
whole set to an import runner (the front end's: the service runs it in a job child). A burst of
writes (a git checkout) is therefore one import; changes that arrive while one runs are the next.

The import is incremental (unchanged files are skipped by size and mtime; only the links naming a
note it wrote or deleted are resolved again, see vault.relink), so a run covers renames and
deletions without being told which files they were, and costs its changes, not the vault's size:
the paths are a hint. A run's import and embedding each stop after their budget
(watch.import_budget_s, watch.embed_budget_s) and the next run goes on. It runs under the job lock
as job `watch`: when another job holds the lock the runner says `locked` (without starting
anything), and the watcher yields (keeps the changes, looks again `watch.retry_s` later); a job
that finds the watcher holding it waits for it (see jobs.lock). A folder symlinked
from outside the vault, which the import does not follow, is not watched: with one the vault is
watched folder by folder. Nothing here imports a front end.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Protocol

from mindtui.config import Settings
from mindtui.text.globs import excluded_by
from mindtui.vault.scan import inside

# File system types where kernel change events do not see other machines' writes.
NETWORK_FILE_SYSTEMS = frozenset({
    "nfs", "nfs4", "cifs", "smb3", "smbfs", "afs", "9p", "ceph", "glusterfs", "lustre", "gpfs",
    "fuse.sshfs", "fuse.rclone", "fuse.s3fs", "fuse.davfs2", "davfs", "fuse.glusterfs"})
CATCH_UP = "."  # the pending "path" of the first run: whatever changed while nothing watched
_STEP_MS = 50  # watchfiles yields once no new change came for this long
UNDECODABLE = "Unable to decode path"  # watchfiles' error for a file name that is not UTF-8


@dataclass
class RunOutcome:
    status: str  # ok | locked (another job holds the lock: nothing ran) | failed | cancelled
    detail: str = ""  # why, and for ok what was held back (a mass deletion refused, a failed embedding)
    more: bool = False  # work is left (embedding stopped at its budget): another run follows


@dataclass
class VaultChange:
    """What the watcher tells its front end (in the watcher's thread: hand it to the UI yourself).

    kind: `imported` (the changes are in the index: search finds them; `report` is the import
    step's), `done` (the run ended, embedding included), `waiting` (another job holds the lock),
    `failed` (detail says why), `watching` (detail: how it watches)."""

    kind: str
    paths: frozenset[str]
    detail: str = ""
    report: dict | None = None


class ImportRunner(Protocol):
    def run(self, paths: frozenset[str], imported: Callable[[dict], None]) -> RunOutcome:
        """Import the vault (the changed paths are a hint); call `imported(report)` once the index has them."""

    def cancel(self) -> None:
        """Stop a run at its next safe point, and for good (called from another thread)."""

    # Optional: prepare() -> None, called once the watch is in place (a runner may start the
    # first run's work ahead, as service.watching does with a child waiting to be told).


def on_network_file_system(path: Path, mounts: Path = Path("/proc/mounts")) -> bool:
    """True when the folder lies on a network file system (read from /proc/mounts; elsewhere False)."""
    try:
        lines = mounts.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return False
    target = os.path.realpath(path)
    best, kind = "", ""
    for line in lines:
        parts = line.split()
        if len(parts) < 3:
            continue
        point = parts[1].replace("\\040", " ")
        if inside(target, point) and len(point) > len(best):
            best, kind = point, parts[2]
    return kind in NETWORK_FILE_SYSTEMS


class NoteFilter:
    """Which file system paths concern the index: .md files (and folders, whose move or deletion
    moves or deletes notes) outside dot folders and outside import.exclude.

    A folder is told from a file by what is on disk, not by its name ("v1.2", "Dr. Smith" are
    folders, `LOG` or vim's `4913` probe are not); one moved away or deleted is known from
    remember_folders() and the folders seen since."""

    def __init__(self, vault: Path, exclude: Iterable[str], follow_external_symlinks: bool = False) -> None:
        self.root = os.path.abspath(vault)  # not resolved: the watcher reports paths under the one it was given
        self.exclude = list(exclude)
        self.follow_external_symlinks = follow_external_symlinks
        self.folders: set[str] = set()  # vault-relative folders seen (only the watch thread adds to it)
        # Symlinked folders whose target lies outside the vault, which the import does not follow
        # (import.follow_external_symlinks): the watch must not follow them either.
        self.links_out: set[str] = set()
        # Why the watch must be placed again: "link" (a link out of the vault appeared: a
        # recursive watch follows it), "folders" (a folder came or went: a watch folder by folder
        # does not see inside a new one); "" when nothing changed.
        self.rewatch = ""

    def remember_folders(self, under: str = "") -> None:
        """Note the folders under `under` (vault-relative; the whole vault by default)."""
        top = os.path.join(self.root, under)
        real_root = os.path.realpath(self.root)
        for current, names, _ in os.walk(top):  # symlinks are listed, not descended into
            rel = os.path.relpath(current, self.root).replace(os.sep, "/")
            # Dot folders hold no notes, but a link out in one (`.obsidian/plugins/dev` ->
            # ~/code/plugin) is followed by a recursive watch all the same.
            in_dot = rel != "." and any(part.startswith(".") for part in rel.split("/"))
            for name in names:
                child = name if rel == "." else f"{rel}/{name}"
                if not in_dot and not name.startswith("."):
                    self.folders.add(child)
                if child not in self.links_out and self.leads_out(os.path.join(current, name), real_root):
                    self.links_out.add(child)
                    self.rewatch = "link"  # (a folder moved in with such a link inside it)

    def leads_out(self, path: str, real_root: str | None = None) -> bool:
        """A symlink to a folder outside the vault that the import does not follow."""
        if self.follow_external_symlinks or not os.path.islink(path):
            return False
        real_root = real_root or os.path.realpath(self.root)
        target = os.path.realpath(path)
        return os.path.isdir(target) and not inside(target, real_root)

    def watched_folders(self) -> list[str]:
        """Every folder to watch one by one (absolute), when a recursive watch would follow a
        link out of the vault: the vault and its folders, not those behind such a link."""
        outside = tuple(f"{link}/" for link in self.links_out)
        inner = sorted(f for f in self.folders if f not in self.links_out and not f.startswith(outside))
        return [self.root, *(os.path.join(self.root, f) for f in inner)]

    def relative(self, path: str) -> str | None:
        """The vault-relative path of a change that concerns the index, else None."""
        rel = os.path.relpath(os.path.abspath(path), self.root).replace(os.sep, "/")
        parts = rel.split("/")
        if rel == "." or parts[0] == "..":
            return None
        if any(part.startswith(".") for part in parts):
            if rel not in self.links_out and self.leads_out(path):  # (a recursive watch follows it)
                self.links_out.add(rel)
                self.rewatch = "link"
            return None
        if excluded_by(rel, self.exclude) is not None:
            return None
        behind = next((link for link in self.links_out if rel == link or rel.startswith(link + "/")), None)
        if behind is not None:
            if rel != behind or self.leads_out(path):
                return None  # behind a link the import does not follow
            self.links_out.discard(rel)  # the link is gone or replaced: what is there now counts
            self.rewatch = self.rewatch or "folders"
        elif self.leads_out(path):  # (never walked: it may lead to /usr)
            self.links_out.add(rel)
            self.folders.add(rel)
            self.rewatch = "link"
            return None
        if parts[-1].lower().endswith(".md") or rel in self.folders:
            if rel in self.folders and not os.path.isdir(path):
                self.rewatch = self.rewatch or "folders"  # moved away or deleted
            return rel
        if os.path.isdir(path):  # made or moved in: so are the folders inside it
            self.folders.add(rel)
            self.remember_folders(rel)
            self.rewatch = self.rewatch or "folders"
            return rel
        return None  # an attachment, a temporary file of an editor, a log

    def __call__(self, change, path: str) -> bool:  # watchfiles' watch_filter
        return self.relative(path) is not None


class VaultWatcher:
    """Watches `vault` and runs `runner` for its changes. start(), then stop() (or use `with`)."""

    def __init__(self, vault: Path, settings: Settings, runner: ImportRunner,
                 on_change: Callable[[VaultChange], None] | None = None, *, catch_up: bool = True,
                 force_polling: bool | None = None) -> None:
        """catch_up: the first run comes right after start (changes made while nothing watched).
        force_polling: None decides by watch.polling (auto: poll on a network file system)."""
        self.vault = Path(vault)
        self.settings = settings
        self.runner = runner
        self.on_change = on_change or (lambda change: None)
        self.quiet_s = settings.watch.quiet_s
        self.max_wait_s = settings.watch.max_wait_s
        self.retry_s = settings.watch.retry_s
        self.filter = NoteFilter(self.vault, settings.import_.exclude, settings.import_.follow_external_symlinks)
        if force_polling is None:
            mode = settings.watch.polling
            force_polling = mode == "always" or (mode == "auto" and on_network_file_system(self.vault))
        self.polling = force_polling
        self.runs = 0  # runs started (a locked one included)
        self._cond = threading.Condition()
        self._pending: set[str] = {CATCH_UP} if catch_up else set()
        self._due = time.monotonic()  # the pending changes are imported from this time on
        self._since = self._due  # when the oldest pending change came: the wait ends max_wait_s after it
        self._running = False
        self._more = False  # the last run left work: the next one follows without a change
        self._failures = 0  # failed runs in a row: each doubles the wait before the next try
        self._tried = 0.0  # when the last run ended
        self._failed = ""  # what the last failed run said (said once while it stays the same)
        self._waiting = False  # the last run found the lock held (said once)
        self._held = ""  # what the last run held back, said once
        self._stop = threading.Event()
        self._ready = threading.Event()
        # The file system watch ended (stopped, or it gave up, a `failed` change said why): a
        # headless front end exits instead of watching nothing.
        self.ended = threading.Event()
        self._threads: list[threading.Thread] = []

    # -- lifetime --------------------------------------------------------------------------
    def start(self) -> "VaultWatcher":
        if not self.vault.is_dir():
            raise FileNotFoundError(f"the vault {self.vault} is not a folder")
        self._threads = [threading.Thread(target=self._watch, name="vault-watch", daemon=True),
                         threading.Thread(target=self._imports, name="vault-import", daemon=True)]
        for thread in self._threads:
            thread.start()
        return self

    def wait_ready(self, timeout: float | None = None) -> bool:
        """True once the file system watch is in place (changes from now on are seen)."""
        return self._ready.wait(timeout)

    def stop(self, timeout: float | None = 30.0) -> None:
        """Stop watching; a run in progress is cancelled at its next safe point and waited for."""
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        self.runner.cancel()  # a run in progress stops; one prepared ahead is let go
        for thread in self._threads:
            thread.join(timeout)

    def __enter__(self) -> "VaultWatcher":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def idle(self) -> bool:
        """Nothing pending and no run in progress."""
        with self._cond:
            return not self._pending and not self._running

    # -- changes ---------------------------------------------------------------------------
    def notice(self, paths: Iterable[str]) -> None:
        """Vault-relative paths that changed: imported once no change has come for quiet_s, or
        max_wait_s after the first of them, whichever comes first."""
        paths = set(paths)
        if not paths:
            return
        with self._cond:
            now = time.monotonic()
            if not self._pending:
                self._since = now
            self._pending |= paths
            due = min(now + self.quiet_s, self._since + self.max_wait_s)
            if self._failures and self._due > due:
                # After failed runs the next try waits longer each time (a full disk, a busy
                # database); an edit may come once that is cleared: try it quiet_s after it,
                # though not sooner than retry_s after the last try.
                self._due = max(now + self.quiet_s, self._tried + self.retry_s)
            else:
                self._due = max(self._due, due)
            self._cond.notify_all()

    def _watch(self) -> None:
        try:
            self._follow()
        except Exception as exc:  # (watchfiles missing or broken) said as a change, not a thread's traceback
            self.on_change(VaultChange("failed", frozenset(), f"the vault is not watched any more: "
                                                              f"{type(exc).__name__}: {exc}"))
        finally:
            self.ended.set()

    def _vault_folder(self) -> tuple[int, int] | None:
        """Which folder the vault path names now (device, inode); None while it is not a folder."""
        try:
            info = os.stat(self.filter.root)
        except OSError:
            return None
        return (info.st_dev, info.st_ino) if stat.S_ISDIR(info.st_mode) else None

    def _await_vault(self) -> tuple[int, int] | None:
        """The vault folder, once there is one (None when stopped first): a vault moved away,
        deleted or unmounted is said once and looked for every retry_s; when it is back, a run
        catches up with whatever it holds."""
        folder = self._vault_folder()
        if folder is not None:
            return folder
        self.on_change(VaultChange("failed", frozenset(), f"the vault folder {self.vault} is gone (moved, "
                                                          "deleted or unmounted); waiting for it to come back"))
        while (folder := self._vault_folder()) is None:
            if self._stop.wait(self.retry_s):
                return None
        self.on_change(VaultChange("watching", frozenset(), f"the vault folder {self.vault} is back"))
        self.notice([CATCH_UP])
        return folder

    def _follow(self) -> None:
        import watchfiles

        polling = self.polling
        undecodable: set[str] = set()  # said once each
        said = ""  # how the last `watching` said it watches
        placed_again = False  # the watch was placed again while the vault stayed: catch up once it is
        while not self._stop.is_set():
            folder = self._await_vault()
            if folder is None:
                return
            self.filter.links_out.clear()
            self.filter.folders.clear()  # (a folder gone since was noticed, or the catch-up finds it)
            self.filter.remember_folders()
            self.filter.rewatch = ""
            # A recursive watch (notify's) follows every symlinked folder, one to /usr too (15,451
            # inotify watches): with such a link the vault is watched folder by folder instead.
            one_by_one = bool(self.filter.links_out)
            paths = self.filter.watched_folders() if one_by_one else [self.filter.root]
            looked_again = not one_by_one  # a folder made while the watch was placed is in no path
            how = ("polling" if polling else "file system events") + (
                f"; folder by folder, not following {len(self.filter.links_out)} symlink(s) out of the vault"
                if one_by_one else "")
            if how != said:  # a watch started again the same way says nothing new
                said = how
                self.on_change(VaultChange("watching", frozenset(), f"watching {self.vault} ({how})"))
            try:
                for changes in watchfiles.watch(
                        *paths, watch_filter=self.filter, step=_STEP_MS, stop_event=self._stop,
                        force_polling=polling, poll_delay_ms=self.settings.watch.poll_interval_ms,
                        rust_timeout=1000, yield_on_timeout=True, raise_interrupt=False,
                        recursive=not one_by_one, ignore_permission_denied=True):
                    if not self._ready.is_set():  # the first (empty) yield on timeout: the watch is in place
                        self._ready.set()
                        getattr(self.runner, "prepare", lambda: None)()
                    if placed_again:  # what changed while it was placed again
                        placed_again = False
                        self.notice([CATCH_UP])
                    self.notice(rel for _, path in changes if (rel := self.filter.relative(path)))
                    if not looked_again:  # once it is in place: a folder that came or went meanwhile
                        looked_again = True
                        self.filter.remember_folders()
                        if self.filter.watched_folders() != paths or not all(map(os.path.isdir, paths)):
                            self.filter.rewatch = self.filter.rewatch or "folders"
                    if self.filter.rewatch == "link" or (one_by_one and self.filter.rewatch):
                        placed_again = True
                        break
                    if self._vault_folder() != folder:
                        # Moved away, deleted, or replaced by a new folder of that name (a sync tool,
                        # a restore): kernel events follow the old folder, so watch the path again.
                        self.on_change(VaultChange("watching", frozenset(), f"the vault folder {self.vault} "
                                                                            f"was replaced: watching the new one"))
                        self.notice([CATCH_UP])
                        break
                else:
                    return
            except (OSError, RuntimeError) as exc:  # e.g. the inotify watch limit, a vanished vault
                if self._vault_folder() != folder and not self._stop.is_set():
                    continue  # the vault went away under the watch: wait for it, as above
                if one_by_one and not self._stop.is_set() and not all(map(os.path.isdir, paths)):
                    self.notice([CATCH_UP])  # a folder went away while the watch was placed: again
                    continue
                if UNDECODABLE in str(exc) and not self._stop.is_set():
                    # A change to a file whose name is not UTF-8 (the import skips it with a
                    # warning) ends watchfiles' watch, polling's too: lost are that change's
                    # neighbours, not the watch. Watch again the same way and catch up.
                    if str(exc) not in undecodable:
                        undecodable.add(str(exc))
                        self.on_change(VaultChange("failed", frozenset(), f"a file name is not UTF-8 and is not "
                                                                          f"imported, rename it ({exc})"))
                    self.notice([CATCH_UP])
                    continue
                if polling or self._stop.is_set():
                    self.on_change(VaultChange("failed", frozenset(), f"the vault is not watched any more: {exc}"))
                    return
                self.on_change(VaultChange("failed", frozenset(), f"file system events failed ({exc}); polling"))
                polling = self.polling = True

    def _imports(self) -> None:
        while True:
            with self._cond:
                while not self._stop.is_set() and (
                        not (self._pending or self._more) or time.monotonic() < self._due):
                    self._cond.wait(max(0.0, self._due - time.monotonic()) if self._pending or self._more else None)
                if self._stop.is_set():
                    return
                if not self.vault.is_dir():  # gone for now (the watch says so): nothing to import from
                    self._due = time.monotonic() + self.retry_s
                    continue
                batch, self._pending, self._more = frozenset(self._pending), set(), False
                self._running = True
                self.runs += 1
            try:
                outcome = self.runner.run(batch, lambda report: self.on_change(
                    VaultChange("imported", batch, report=report)))
            except Exception as exc:  # (no child could start: a full /tmp, no file handles) the thread lives on
                outcome = RunOutcome("failed", f"the import could not run ({type(exc).__name__}: {exc})")
            finally:
                with self._cond:
                    self._running = False
                    self._tried = time.monotonic()
            if outcome.status in ("locked", "failed"):
                # The changes are kept for the next try: a held lock ends, a failure (a full disk, a
                # busy database) may pass; a failing run waits twice as long each time (up to 64x).
                failed = outcome.status == "failed"
                # "waiting" once per held lock, not every retry_s; a failure once until it changes
                # (an edit is tried early, see notice(): a full disk and autosave would say it often)
                if (failed and outcome.detail != self._failed) or (not failed and not self._waiting):
                    self.on_change(VaultChange("failed" if failed else "waiting", batch, outcome.detail))
                self._waiting = not failed
                self._failed = outcome.detail if failed else ""
                with self._cond:
                    self._failures = self._failures + 1 if failed else 0
                    self._pending |= batch
                    self._due = max(self._due, time.monotonic() + self.retry_s * 2 ** min(self._failures, 6))
            elif outcome.status == "ok":
                self._failures, self._waiting, self._failed = 0, False, ""
                if outcome.detail and outcome.detail != self._held:
                    # Not tried again: it stays so until the user decides (the message says how);
                    # the next change is imported as usual, no later than any other.
                    self.on_change(VaultChange("failed", batch, outcome.detail))
                self._held = outcome.detail
                self.on_change(VaultChange("done", batch))
                if outcome.more:  # after a gap in which a waiting job takes the lock
                    with self._cond:
                        self._more = True
                        self._due = max(self._due, time.monotonic() + self.quiet_s)
            else:
                self.on_change(VaultChange(outcome.status, batch, outcome.detail))
