"""One job at a time per database: an advisory file lock next to the database file.

flock is released by the kernel when the process dies, so a killed job never leaves a
stale lock behind.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from mindtui.errors import DatabaseError, JobLockedError
from mindtui.store.failures import store_failure

__all__ = ["JobLock", "JobLockedError"]


class JobLock:
    def __init__(self, db_path: Path) -> None:
        self.path = Path(str(db_path) + ".lock")
        self._fd: int | None = None

    def acquire(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:  # a folder or lock file without permission, a read-only or full disk
            raise self._failure(exc) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise JobLockedError(
                f"another mindtui job is already running on this database (pid {holder}, lock {self.path}); "
                "try again when it has finished"
            ) from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
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
