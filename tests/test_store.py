"""The store: pragmas, sqlite-vec, migrations, refusing files we must not touch."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import apsw
import pytest

from mindtui.store import APPLICATION_ID, DatabaseError, DatabaseTooNewError, open_database
from mindtui.store.migrate import Migration, MigrationFailedError, apply_migrations, latest_version, load_migrations

from conftest import REPO


def test_new_database_is_set_up(db_path):
    conn = open_database(db_path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert conn.execute("PRAGMA user_version").fetchone()[0] == latest_version() >= 1
    assert conn.execute("SELECT vec_version()").fetchone()[0].startswith("v")
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type IN ('table','view')")}
    assert {"notes", "chunks", "chunks_fts", "edges", "note_links", "unresolved_links", "job_runs", "meta"} <= tables
    conn.close()


def test_reopening_applies_nothing_twice(db_path):
    open_database(db_path).close()
    conn = open_database(db_path, migrate=False)
    assert apply_migrations(conn, db_path) == []
    conn.close()


def test_newer_database_is_refused_untouched(db_path):
    conn = open_database(db_path)
    conn.execute(f"PRAGMA user_version = {latest_version() + 7}")
    conn.close()
    before = db_path.read_bytes()
    with pytest.raises(DatabaseTooNewError, match="newer than this mindtui"):
        open_database(db_path)
    assert db_path.read_bytes() == before


def test_foreign_sqlite_file_is_refused(tmp_path):
    path = tmp_path / "other.db"
    other = apsw.Connection(str(path))
    other.execute("CREATE TABLE t(x)")
    other.close()
    with pytest.raises(DatabaseError, match="another application"):
        open_database(path)


def test_garbage_file_is_refused(tmp_path):
    path = tmp_path / "garbage.db"
    path.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(DatabaseError):
        open_database(path)


def test_failed_migration_rolls_back_whole(db_path):
    conn = open_database(db_path, migrate=False)
    good = load_migrations()
    broken = Migration(len(good) + 1, "9999_broken.sql", "CREATE TABLE half_done(x); SELECT * FROM no_such_table;")
    with pytest.raises(MigrationFailedError, match="failed at 9999_broken.sql .no such table: no_such_table.") as failed:
        apply_migrations(conn, db_path, good + [broken])
    assert isinstance(failed.value.__cause__, apsw.SQLError)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(good)
    assert conn.execute("SELECT count(*) FROM sqlite_schema WHERE name = 'half_done'").fetchone()[0] == 0
    conn.close()


def test_fts_rows_follow_chunk_deletes(db_path):
    conn = open_database(db_path)
    with conn:
        conn.execute("INSERT INTO notes (note_id, path, title, type, content_hash, size, mtime_ns, chunk_profile,"
                     " indexed_at) VALUES ('n', 'n.md', 'N', 'note', 'h', 1, 1, 'default', 'now')")
        conn.execute("INSERT INTO chunks (chunk_key, note_id, seq, text, token_count, content_hash,"
                     " retriever_weight, line_start, line_end) VALUES ('n#0', 'n', 0, 't', 1, 'h', 1, 1, 1)")
        conn.execute("INSERT INTO chunks_fts (rowid, title, headings, body) VALUES (last_insert_rowid(), 'n', '', 'wort')")
    assert conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'wort'").fetchone()[0] == 1
    with conn:
        conn.execute("DELETE FROM notes WHERE note_id = 'n'")  # cascades to chunks, trigger to FTS
    assert conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'wort'").fetchone()[0] == 0
    conn.close()


def test_migrations_and_defaults_ship_inside_the_wheel(tmp_path):
    """An installed mindtui (not a checkout) must find its migrations and default config."""
    out = tmp_path / "wheel"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                    "-w", str(out), str(REPO)], check=True, capture_output=True, timeout=300)
    (wheel,) = out.glob("mindtui-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    migrations = sorted(m.name for m in (REPO / "migrations").glob("*.sql"))  # the checkout's numbered files
    assert len(migrations) == latest_version() >= 4
    assert sorted(n.removeprefix("mindtui/_migrations/") for n in names
                  if n.startswith("mindtui/_migrations/") and n.endswith(".sql")) == migrations
    assert "mindtui/_defaults/types.yaml" in names and "mindtui/_defaults/mindtui.yaml" in names
