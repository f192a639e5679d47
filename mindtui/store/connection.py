"""The one way to open the store: WAL, busy timeout, foreign keys, application_id, sqlite-vec,
and the audience the connection reads as (see `visibility`).

apsw connections are not shared between threads: each thread uses its own (`pool.ConnectionPool`
hands them out).
"""

from __future__ import annotations

import importlib.util
import urllib.parse
from functools import cache
from pathlib import Path

import apsw

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


class DatabaseOutdatedError(DatabaseError):
    """The file's schema is older than ours and this connection may not upgrade it (an agent's, a read-only file's)."""


class DatabaseReadOnlyError(DatabaseError):
    """A write to a database this process can only read."""


@cache
def sqlite_vec_path() -> str:
    """The sqlite-vec extension the sqlite_vec package ships (its loadable_path()), found without
    importing the package: its __init__ imports numpy, about as long as the rest of the store."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or spec.origin is None:
        raise DatabaseError("cannot load the sqlite-vec extension: the sqlite_vec package is not installed")
    return str(Path(spec.origin).parent / "vec0")


def _load_sqlite_vec(conn: apsw.Connection) -> str:
    try:
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec_path())
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
    agent_history: bool = False,
) -> apsw.Connection:
    """Open (and by default create and migrate) the mindtui store at `path`.

    `audience` agent: the connection sees only what an agent may (TEMP views, see `visibility`;
    `private_paths` are hidden from it too, whatever the import stored; what the owner's searches
    taught it reads only with `agent_history`, privacy.agent_uses_history), and never migrates: an
    out-of-date file is refused (DatabaseOutdatedError). Jobs and the owner read everything.

    A file this process cannot write (permissions, a read-only mount) is opened read-only, as
    `readonly=True` asks for: reading works, a write raises apsw.ReadOnlyError (see `failures`),
    and `is_read_only(conn)` tells. A read-only file has no migration applied to it.
    """
    path = Path(path)
    if readonly and not path.exists():
        raise DatabaseError(f"{path}: no such database (run `mindtui index VAULT --db {path}` first)")
    conn = None
    try:
        if not readonly:
            path.parent.mkdir(parents=True, exist_ok=True)
        conn = _connect(path, readonly, busy_timeout_ms)
        _check_application_id(conn, path)
        if not is_read_only(conn):
            # WAL lets readers (TUI, search) work while the nightly job writes.
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA temp_store=MEMORY")
        _load_sqlite_vec(conn)
        register_name_key(conn)  # migration 0010 needs it
        _upgrade(conn, path, migrate=migrate, audience=audience)
    except BaseException as exc:
        if conn is not None:
            conn.close()
        from mindtui.store.failures import store_failure

        failure = store_failure(exc, path)
        if failure is None or failure is exc:
            raise
        raise failure from exc
    from mindtui.store.visibility import restrict

    restrict(conn, audience, private_paths, agent_history)
    return conn


def is_read_only(conn: apsw.Connection) -> bool:
    """The connection cannot write its database: opened so, or the file is not writable."""
    return bool(conn.readonly("main"))


def _connect(path: Path, readonly: bool, busy_timeout_ms: int) -> apsw.Connection:
    """The connection, read-write when the file allows it. SQLite itself falls back to read-only
    when the OS refuses to write the file. A read-only WAL database whose folder is not writable
    either has no shared-memory index to read through: it is opened `immutable` then, which is
    exact as long as no write-ahead log holds unmerged pages (then it says what to do)."""
    flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    conn = apsw.Connection(str(path), flags=flags)
    conn.set_busy_timeout(busy_timeout_ms)
    if not is_read_only(conn):
        return conn
    try:
        conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()
        return conn
    except (apsw.CantOpenError, apsw.ReadOnlyError):
        conn.close()
    wal = Path(str(path) + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        raise DatabaseError(
            f"{path}: the database is read-only here and its write-ahead log ({wal.name}) holds changes not "
            "yet merged into it; open it once where it is writable (any mindtui command merges them), then try again"
        )
    conn = apsw.Connection(f"file:{urllib.parse.quote(str(path.resolve()))}?immutable=1",
                           flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    conn.set_busy_timeout(busy_timeout_ms)
    return conn


def _upgrade(conn: apsw.Connection, path: Path, *, migrate: bool, audience: Audience) -> None:
    """Migrate when this connection may (the owner's or a job's, on a writable file), else make
    sure the schema is one this mindtui reads."""
    from mindtui.store.migrate import apply_migrations, check_schema_version, require_current_schema

    if audience is not Audience.OWNER:
        # An AI client starting `mindtui mcp` must not upgrade the owner's database behind their back.
        require_current_schema(conn, path, "an agent's connection never upgrades it")
    elif not migrate:
        check_schema_version(conn, path)
    elif is_read_only(conn):
        require_current_schema(conn, path, "the file is open read-only, so it cannot be upgraded")
    else:
        apply_migrations(conn, path)


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
