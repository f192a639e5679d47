"""What a failure of the database file, or of the disk under it, tells its user.

A full disk, an I/O error, a read-only file, a folder without permission: each becomes one
DatabaseError (exit code 4) whose message names the file and says what to do; SQLite's or the
OS's own words follow in parentheses. Nothing committed is lost in any of these (SQLite rolls
the open transaction back; vault files are replaced atomically), which the messages say, so
that a person knows the next run simply continues.

Errors that are not about the storage (an SQL mistake, a constraint) are not translated: they
are bugs and keep their traceback.
"""

from __future__ import annotations

import errno
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import apsw

from mindtui.errors import DatabaseError

KEPT = "everything committed before is kept"


class DiskFullError(DatabaseError):
    """The disk (or the database's size limit) is full."""


class StorageIOError(DatabaseError):
    """The disk reported an I/O error."""


class StoragePermissionError(DatabaseError):
    """A file or folder mindtui must write is not writable (permissions, a read-only file system)."""


def _apsw_failures() -> tuple[tuple[type, type, str], ...]:
    """(apsw error, our kind, what to tell) in the order they are tried; `{path}` and `{exc}` filled in."""
    from mindtui.store.connection import DatabaseLockedError, DatabaseReadOnlyError

    return (
        (apsw.ReadOnlyError, DatabaseReadOnlyError, "{path}: the database is read-only here, and this needs to "
         "write it ({exc}); searching and reading work. Run it where the file (and its folder) are writable, "
         "or on a writable copy"),
        (apsw.FullError, DiskFullError, "{path}: the disk is full ({exc}); " + KEPT + ". Free some space and run "
         "it again"),
        (apsw.IOError, StorageIOError, "{path}: the disk reported an I/O error ({exc}); " + KEPT + ". Check the "
         "disk and its free space, then run it again"),
        (apsw.BusyError, DatabaseLockedError, "{path}: the database is locked by another process ({exc}); try "
         "again when it has finished"),
        (apsw.LockedError, DatabaseLockedError, "{path}: the database is locked ({exc}); try again when the "
         "other use has finished"),
        (apsw.CantOpenError, DatabaseError, "{path}: cannot open the database or its -wal/-shm files ({exc}); "
         "check that its folder exists and that mindtui may write there"),
        (apsw.NotADBError, DatabaseError, "{path}: not a SQLite database ({exc})"),
        (apsw.CorruptError, DatabaseError, "{path}: the database file is damaged ({exc}); restore a backup, or "
         "move it away and run `mindtui index VAULT` to build it again"),
        (apsw.PermissionsError, StoragePermissionError, "{path}: permission denied ({exc}); check the file's and "
         "its folder's permissions"),
    )


def _apsw_failure(exc: apsw.Error, path: Path | str) -> DatabaseError | None:
    for error, kind, text in _apsw_failures():
        if isinstance(exc, error):
            return kind(text.format(path=path, exc=exc))
    return None


_OS_FAILURES = {
    errno.ENOSPC: (DiskFullError, "no space left on the device", f"{KEPT}. Free some space and run it again"),
    errno.EDQUOT: (DiskFullError, "the disk quota is exhausted", f"{KEPT}. Free some space and run it again"),
    errno.EFBIG: (DiskFullError, "the file would grow beyond its size limit", f"{KEPT}. Raise the limit or free "
                  "space, then run it again"),
    errno.EIO: (StorageIOError, "I/O error", f"{KEPT}. Check the disk, then run it again"),
    errno.EROFS: (StoragePermissionError, "the file system is read-only", "reading works; run it where the "
                  "files are writable"),
    errno.EACCES: (StoragePermissionError, "permission denied", "check the permissions of the file and its "
                   "folder (mindtui must be able to write there)"),
    errno.EPERM: (StoragePermissionError, "operation not permitted", "check the permissions of the file and "
                  "its folder (mindtui must be able to write there)"),
}


def _os_failure(exc: OSError) -> DatabaseError | None:
    known = _OS_FAILURES.get(exc.errno)
    if known is None:
        return None
    kind, what, todo = known
    # Only the file the OS names: a write() that failed names none, and the database need not
    # live on the disk that filled up (a vault elsewhere).
    return kind(f"{exc.filename}: {what}; {todo}" if exc.filename else f"{what} (writing a file); {todo}")


def store_failure(exc: BaseException, path: Path | str | None = None) -> DatabaseError | None:
    """The user's one-line error for a storage failure, or None when `exc` is not one. `path`:
    the database an apsw error happened on (an OS error names its own file, or none)."""
    if isinstance(exc, DatabaseError):
        return exc
    if isinstance(exc, apsw.Error):
        return _apsw_failure(exc, path or "the database")
    if isinstance(exc, OSError):
        return _os_failure(exc)
    return None


@contextmanager
def store_errors(path: Path | str) -> Iterator[None]:
    """Inside: a storage failure leaves as its one-line DatabaseError (`path`: the database)."""
    try:
        yield
    except Exception as exc:
        failure = store_failure(exc, path)
        if failure is None or failure is exc:
            raise
        raise failure from exc
