"""One job at a time per database: an advisory file lock next to the database file.

flock is released by the kernel when the process dies, so a killed job never leaves a
stale lock behind. The lock file names its holder (`pid job`): a job that finds the live
vault's short import (job `watch`) holding the lock waits for it (up to `wait_s`) instead of
failing, while the watcher itself never waits: it yields and tries again later, first looking
whether the lock is free (`holder`) so that it starts no child while a nightly runs. So a
nightly and a watcher never write at once, and neither fails because of the other.

A holder writes its name right after it took the lock: one that finds the lock held and the name
not written yet (or the lock held only for a moment, by the watcher's look) tries again for
BUSY_GRACE_S rather than report a nameless holder.

Lock order: a process that holds both locks takes this one first, then the curation answer lock
(`<db>.curation-lock`, curation.actions), and releases them in the reverse order. Answering a
card takes the curation lock only (never this one), a job step that writes vault files (the import
finishing an answer killed before its files) takes it inside this one: no process waits for the
job lock while holding the curation lock, so the two cannot deadlock.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from mindtui.errors import DatabaseError, JobLockedError
from mindtui.store.failures import store_failure

__all__ = ["JobLock", "JobLockedError", "WATCH_JOB"]

WATCH_JOB = "watch"  # the live vault's import job: short, so others wait for it
# A watcher's own lock, held while it watches: one watcher per database imports, another (a
# second `mindtui watch`, the TUI beside a watch service) stands by (service.watching).
WATCHER_LOCK_SUFFIX = ".watch-lock"
_WAIT_STEP_S = 0.05
BUSY_GRACE_S = 0.5  # a holder not named yet, or a look at the lock: it is taken again this long
# The holder's name fills this many bytes (padded with spaces, which readers strip): one write
# replaces a longer name whole, so no reader sees a mix of two ("999 watchghtly").
NAME_WIDTH = 64


def _holder(fd: int) -> tuple[str, str]:
    """(pid, job) as the holder wrote them; empty strings before it has."""
    pid, _, job = os.pread(fd, NAME_WIDTH, 0).decode("ascii", "replace").strip().partition(" ")
    return pid, job


def holder(db_path: Path, suffix: str = ".lock") -> str | None:
    """The job holding the database's lock ("" when it has not said), or None when it is free.
    Taking the lock for a moment is the only way to know; a job starting in that moment retries.
    suffix: of the lock file's name (WATCHER_LOCK_SUFFIX: the watcher that imports)."""
    held = lock_holder(db_path, suffix)
    return None if held is None else held[1]


def lock_holder(db_path: Path, suffix: str = ".lock") -> tuple[str, str] | None:
    """(pid, job) of the lock's holder (empty strings for what it has not written yet), or None
    when the lock is free: `holder` with the pid."""
    path = Path(str(db_path) + suffix)
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return _holder(fd)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


class JobLock:
    def __init__(self, db_path: Path, job: str = "job", wait_s: float = 0.0, suffix: str = ".lock") -> None:
        """job: who holds it (written into the lock file); wait_s: how long to wait for a
        watcher's import that holds it (0: never wait); suffix: of the lock file's name."""
        self.path = Path(str(db_path) + suffix)
        self.job = job
        self.wait_s = wait_s
        self._fd: int | None = None
        self.held_by = ""  # the pid of the holder that made the last acquire() fail ("" unknown)

    def acquire(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:  # a folder or lock file without permission, a read-only or full disk
            raise self._failure(exc) from exc
        began = time.monotonic()
        deadline = began + self.wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                pid, job = _holder(fd)
                waits = job == WATCH_JOB and self.job != WATCH_JOB and time.monotonic() < deadline
                if waits or time.monotonic() < began + BUSY_GRACE_S:
                    time.sleep(_WAIT_STEP_S)  # the live vault's import ends within seconds
                    continue
                os.close(fd)
                self.held_by = pid
                raise JobLockedError(
                    f"another mindtui job{f' ({job})' if job else ''} is already running on this database "
                    f"(pid {pid or 'unknown'}, lock {self.path}); try again when it has finished"
                ) from None
        try:
            name = f"{os.getpid()} {self.job}".encode("ascii", "replace")[:NAME_WIDTH].ljust(NAME_WIDTH)
            os.pwrite(fd, name, 0)  # the file is never empty again, nor a mix of two names
            os.ftruncate(fd, NAME_WIDTH)  # what a longer file of an older version left
        except OSError as exc:  # a full disk: the job could not write anything either
            os.close(fd)
            raise self._failure(exc) from exc
        self._fd = fd

    def _failure(self, exc: OSError) -> DatabaseError:
        return store_failure(exc, self.path) or DatabaseError(f"{self.path}: cannot use the job lock ({exc})")

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "JobLock":
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()
