"""The one way to open the store: WAL, busy timeout, foreign keys, application_id, sqlite-vec,
and the audience the connection reads as (see `visibility`).

apsw connections are not shared between threads: each thread uses its own (`pool.ConnectionPool`
hands them out).
"""

from __future__ import annotations

from pathlib import Path

import apsw
import sqlite_vec

from mindtui import errors
from mindtui.audience import Audience
from mindtui.store.names import register_name_key

# 'MNDT' as a 32-bit integer: lets us tell a mindtui store from any other SQLite file.
APPLICATION_ID = 0x4D4E4454
DEFAULT_BUSY_TIMEOUT_MS = 5000


DatabaseError = errors.DatabaseError


class DatabaseTooNewError(DatabaseError):
    """The file was written by a newer mindtui (its schema version is above ours)."""


class DatabaseLockedError(DatabaseError):
    """Another process holds a write lock longer than the busy timeout."""


def _load_sqlite_vec(conn: apsw.Connection) -> str:
    try:
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        conn.enable_load_extension(False)
        (version,) = conn.execute("SELECT vec_version()").fetchone()
    except apsw.Error as exc:
        raise DatabaseError(f"cannot load the sqlite-vec extension: {exc}") from exc
    if not str(version).startswith("v"):
        raise DatabaseError(f"sqlite-vec reported an unexpected version {version!r}")
    return version


def open_database(
    path: str | Path,
    *,
    migrate: bool = True,
    busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
    readonly: bool = False,
    audience: Audience = Audience.OWNER,
    private_paths: tuple[str, ...] = (),
) -> apsw.Connection:
    """Open (and by default create and migrate) the mindtui store at `path`.

    `audience` agent: the connection sees only what an agent may (TEMP views, see `visibility`;
    `private_paths` are hidden from it too, whatever the import stored). Jobs and the owner read
    everything.
    """
    path = Path(path)
    if readonly and not path.exists():
        raise DatabaseError(f"{path}: no such database (run `mindtui index VAULT --db {path}` first)")
    if not readonly:
        path.parent.mkdir(parents=True, exist_ok=True)
    flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    try:
        conn = apsw.Connection(str(path), flags=flags)
        conn.set_busy_timeout(busy_timeout_ms)
        _check_application_id(conn, path)
        if not readonly:
            # WAL lets readers (TUI, search) work while the nightly job writes.
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA temp_store=MEMORY")
    except apsw.BusyError as exc:
        raise DatabaseLockedError(f"{path}: the database is locked by another process ({exc})") from exc
    except apsw.NotADBError as exc:
        raise DatabaseError(f"{path}: not a SQLite database ({exc})") from exc
    except apsw.CantOpenError as exc:
        raise DatabaseError(f"{path}: cannot open ({exc})") from exc
    _load_sqlite_vec(conn)
    register_name_key(conn)  # migration 0008 needs it
    if migrate and not readonly:
        from mindtui.store.migrate import apply_migrations

        apply_migrations(conn, path)
    else:
        from mindtui.store.migrate import check_schema_version

        check_schema_version(conn, path)
    from mindtui.store.visibility import restrict

    restrict(conn, audience, private_paths)
    return conn


def _check_application_id(conn: apsw.Connection, path: Path) -> None:
    (app_id,) = conn.execute("PRAGMA application_id").fetchone()
    if app_id == APPLICATION_ID:
        return
    (user_version,) = conn.execute("PRAGMA user_version").fetchone()
    (tables,) = conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()
    if app_id == 0 and user_version == 0 and tables == 0:
        return  # a new, empty file: the first migration stamps it
    raise DatabaseError(
        f"{path}: this SQLite file belongs to another application "
        f"(application_id {app_id:#x}); refusing to touch it"
    )
