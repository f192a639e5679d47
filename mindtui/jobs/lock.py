"""One job at a time per database: an advisory file lock next to the database file.

flock is released by the kernel when the process dies, so a killed job never leaves a
stale lock behind. The lock file names its holder (`pid job`): a job that finds the live
vault's short import (job `watch`) holding the lock waits for it (up to `wait_s`) instead of
failing, while the watcher itself never waits: it yields and tries again later. So a nightly
and a watcher never write at once, and neither fails because of the other.
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
_WAIT_STEP_S = 0.05


class JobLock:
    def __init__(self, db_path: Path, job: str = "job", wait_s: float = 0.0) -> None:
        """job: who holds it (written into the lock file); wait_s: how long to wait for a
        watcher's import that holds it (0: never wait)."""
        self.path = Path(str(db_path) + ".lock")
        self.job = job
        self.wait_s = wait_s
        self._fd: int | None = None

    def acquire(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:  # a folder or lock file without permission, a read-only or full disk
            raise self._failure(exc) from exc
        deadline = time.monotonic() + self.wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                pid, _, job = os.pread(fd, 64, 0).decode("ascii", "replace").strip().partition(" ")
                if job == WATCH_JOB and self.job != WATCH_JOB and time.monotonic() < deadline:
                    time.sleep(_WAIT_STEP_S)  # the live vault's import ends within seconds
                    continue
                os.close(fd)
                raise JobLockedError(
                    f"another mindtui job{f' ({job})' if job else ''} is already running on this database "
                    f"(pid {pid or 'unknown'}, lock {self.path}); try again when it has finished"
                ) from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()} {self.job}".encode("ascii", "replace"), 0)
        except OSError as exc:  # a full disk: the job could not write anything either
            os.close(fd)
            raise self._failure(exc) from exc
        self._fd = fd

    def _failure(self, exc: OSError) -> DatabaseError:
        return store_failure(exc, self.path) or DatabaseError(f"{self.path}: cannot use the job lock ({exc})")

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
