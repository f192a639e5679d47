"""Schema migrations: numbered files NNNN_name.sql, one transaction each, keyed on user_version
(read inside the transaction that applies the next one)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import apsw

from mindtui import locations
from mindtui.errors import DatabaseError

_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def load_migrations(folder: Path | None = None) -> list[Migration]:
    folder = folder or locations.migrations_dir()
    found: list[Migration] = []
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        match = _MIGRATION_NAME.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise RuntimeError(f"migrations in {folder} are not numbered 0001.. without gaps: {versions}")
    return found


def latest_version() -> int:
    return len(load_migrations())


def schema_version(conn: apsw.Connection) -> int:
    (version,) = conn.execute("PRAGMA user_version").fetchone()
    return int(version)


def check_schema_version(conn: apsw.Connection, path: Path | str, latest: int | None = None) -> int:
    from mindtui.store.connection import DatabaseTooNewError

    latest = latest_version() if latest is None else latest
    current = schema_version(conn)
    if current > latest:
        raise DatabaseTooNewError(
            f"{path}: database schema version {current} is newer than this mindtui understands "
            f"(up to {latest}). Upgrade mindtui, or point --db at another file; nothing was changed."
        )
    return current


def require_current_schema(conn: apsw.Connection, path: Path | str, why: str) -> int:
    """For a connection that must not migrate (an agent's, a read-only file's): the schema must be
    this mindtui's already. `why` says why this connection does not upgrade it."""
    from mindtui.store.connection import DatabaseOutdatedError

    latest = latest_version()
    current = check_schema_version(conn, path, latest)
    if current < latest:
        raise DatabaseOutdatedError(
            f"{path}: database schema version {current} is older than this mindtui's ({latest}) and {why}; "
            f"upgrade it with any owner command on a writable file (`mindtui status --db {path}`, the TUI or "
            "the nightly job), then try again. Nothing was changed."
        )
    return current


class MigrationFailedError(DatabaseError):
    """A migration the file's schema version calls for does not apply (exit 4, the file untouched)."""


def apply_migrations(conn: apsw.Connection, path: Path | str = "", migrations: list[Migration] | None = None) -> list[str]:
    """Apply every migration above the file's user_version, each in its own transaction.

    The version is read again inside each migration's `BEGIN IMMEDIATE` (the write lock): two
    openers that both saw an old version (the TUI's workers after an upgrade, the TUI and the
    nightly job) take turns, and the second finds the work done instead of applying it twice.
    """
    from mindtui.store.connection import APPLICATION_ID

    migrations = load_migrations() if migrations is None else migrations
    latest = len(migrations)
    if check_schema_version(conn, path, latest=latest) == latest:
        return []  # the common case needs no write lock
    applied: list[str] = []
    while True:
        conn.execute("BEGIN IMMEDIATE")
        try:
            current = check_schema_version(conn, path, latest=latest)
            if current == latest:
                conn.execute("COMMIT")
                return applied
            migration = migrations[current]  # numbered 1.. without gaps: the one above `current`
            try:
                conn.execute(migration.sql)
            except (apsw.SQLError, apsw.ConstraintError) as exc:  # the schema is not what its version says
                raise MigrationFailedError(
                    f"{path}: upgrading the schema from version {current} failed at {migration.name} ({exc}): "
                    f"its tables are not those of schema version {current} (another program or a development "
                    "build of mindtui may have changed them). Nothing was changed; keep the file, and index the "
                    "vault into a new database (--db NEW.db)") from exc
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID:d}")
            # PRAGMA takes no bound parameters; the value is an int we produced ourselves.
            conn.execute(f"PRAGMA user_version = {migration.version:d}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")  # a failed migration leaves the previous version intact
            raise
        applied.append(migration.name)
