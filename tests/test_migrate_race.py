"""Migrations under concurrency, and the openers that must never migrate (agents, read-only files)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import apsw
import pytest

from mindtui.audience import Audience
from mindtui.cli import main
from mindtui.config import load_settings
from mindtui.service import DatabaseError, Service
from mindtui.store import open_database
from mindtui.store.migrate import apply_migrations, latest_version, load_migrations

from conftest import REPO

OLD_VERSION = 5  # 0006 creates tables without IF NOT EXISTS: applying it twice fails loudly

# A child that opens the database the way every mindtui process does. Its busy handler tells the
# test when it first waits for the write lock, then waits for the test's "go" (the lock is free
# then) and from there waits as SQLite's own busy timeout would. It prints the migrations it applied.
RACER = textwrap.dedent("""
    import json, sys, time
    import apsw

    class Announcing(apsw.Connection):
        def set_busy_timeout(self, ms):
            said = []

            def wait_for_lock(count):
                if not said:
                    said.append(True)
                    print("waiting", flush=True)
                    sys.stdin.readline()
                    return True
                time.sleep(0.001)  # SQLite's busy timeout backs off the same way
                return count < 120_000

            self.set_busy_handler(wait_for_lock)

    apsw.Connection = Announcing
    from mindtui.store import migrate
    from mindtui.store.connection import open_database

    applied = []
    real_apply = migrate.apply_migrations

    def recording(conn, path="", migrations=None):
        names = real_apply(conn, path, migrations)
        applied.extend(names)
        return names

    migrate.apply_migrations = recording
    open_database(sys.argv[1]).close()
    print(json.dumps(applied), flush=True)
""")


def old_database(path):
    conn = open_database(path, migrate=False)
    apply_migrations(conn, path, load_migrations()[:OLD_VERSION])
    conn.close()
    return path


def user_version(path) -> int:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()


def test_two_processes_migrating_an_old_database_both_succeed_and_apply_each_migration_once(db_path):
    old_database(db_path)
    holder = apsw.Connection(str(db_path))
    holder.execute("BEGIN IMMEDIATE")  # both racers read the old version, then queue for the write lock
    racers = [subprocess.Popen([sys.executable, "-c", RACER, str(db_path)], cwd=REPO, text=True,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
              for _ in range(2)]
    try:
        for racer in racers:
            assert racer.stdout.readline() == "waiting\n", racer.stderr.read()
        holder.execute("COMMIT")
        outputs = [racer.communicate("go\n", timeout=120) for racer in racers]
    finally:
        holder.close()
        for racer in racers:
            if racer.poll() is None:
                racer.kill()
    assert [racer.returncode for racer in racers] == [0, 0], [err for _, err in outputs]
    applied = [json.loads(out) for out, _ in outputs]
    pending = [m.name for m in load_migrations()[OLD_VERSION:]]
    assert sorted(applied[0] + applied[1]) == pending  # each pending migration by exactly one of them
    assert user_version(db_path) == latest_version()


def test_an_agent_service_never_migrates_and_says_why(db_path):
    old_database(db_path)
    settings = load_settings().with_overrides(db=str(db_path))
    with Service(settings, audience=Audience.AGENT) as service:
        with pytest.raises(DatabaseError, match=r"older than this mindtui.*agent's connection never upgrades"):
            service.status()
    assert user_version(db_path) == OLD_VERSION
    with Service(settings, audience=Audience.OWNER) as service:  # the owner's does
        assert service.status()["schema_version"] == latest_version()


def test_agent_command_on_an_old_database_is_one_line_and_exit_4(db_path, capsys):
    old_database(db_path)
    assert main(["search", "anything", "--db", str(db_path), "--audience", "agent", "--mode", "fts"]) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(db_path) in err and "never upgrades" in err
    assert user_version(db_path) == OLD_VERSION


def test_mcp_server_on_an_old_database_exits_4_without_migrating(db_path):
    old_database(db_path)
    done = subprocess.run([sys.executable, "-m", "mindtui", "mcp", "--db", str(db_path)], cwd=REPO, text=True,
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    assert done.returncode == 4, done.stderr
    assert done.stderr.count("\n") == 1 and "older than this mindtui" in done.stderr
    assert user_version(db_path) == OLD_VERSION


def test_a_migration_that_does_not_apply_is_one_line_exit_4_and_changes_nothing(db_path, capsys):
    """A file whose tables are not what its schema version says (a development build added a column
    a later migration adds) is refused with what failed, no traceback, and left as it was."""
    conn = open_database(db_path, migrate=False)
    apply_migrations(conn, db_path, load_migrations()[:10])
    conn.execute("ALTER TABLE search_log ADD COLUMN query_vector BLOB")  # what 0011 adds
    conn.close()
    before = db_path.read_bytes()
    assert main(["status", "--db", str(db_path)]) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "from version 10 failed at 0011_usage_memory.sql (duplicate column name: query_vector)" in err
    assert "Nothing was changed" in err
    assert user_version(db_path) == 10 and db_path.read_bytes() == before
