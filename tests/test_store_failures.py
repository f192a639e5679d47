"""Storage failures are messages: a full disk, an I/O error, a read-only database, a lock file
without permission each end in one line naming the file and what to do, exit code 4, with
nothing committed lost; after the cause is gone the next run completes.

How each is made real (the tests run as root in CI, and root writes any file whatever its mode):
- a full disk: `PRAGMA max_page_count` on every connection the command opens (apsw's
  connection hooks), so SQLite itself answers SQLITE_FULL mid-import;
- an I/O error: a child process whose file-size limit (RLIMIT_FSIZE) stops every write past
  the first bytes of a file, so the kernel refuses SQLite's writes (EFBIG, SQLITE_IOERR);
- an unwritable file or folder: a forked child that drops root to `nobody` (or, when the tests
  do not run as root, the files' write permission taken away), so the kernel refuses the open.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

import apsw
import pytest

from mindtui.cli import main
from mindtui.store import open_database

from conftest import REPO, Vault, dump_database

NOBODY = 65534


def note_text(number: int) -> str:
    return f"# Note {number}\n\n" + " ".join(f"word{number}x{k}" for k in range(400)) + "\n"


def write_notes(vault: Vault, numbers) -> None:
    for number in numbers:
        vault.write(f"notes/n{number:03d}.md", note_text(number), dedent=False)


def scalar(db_path: Path, sql: str):
    conn = open_database(db_path)
    try:
        return conn.execute(sql).fetchone()[0]
    finally:
        conn.close()


def note_count(db_path: Path) -> int:
    return scalar(db_path, "SELECT count(*) FROM notes")


def integrity(db_path: Path) -> str:
    return scalar(db_path, "PRAGMA integrity_check")


def one_line(err: str) -> str:
    assert err.count("\n") == 1 and err.endswith("\n"), err
    return err


# -- a full disk -------------------------------------------------------------------------------

def test_a_full_disk_is_one_line_exit_4_keeps_what_was_committed_and_the_next_run_completes(
        tmp_path, db_path, monkeypatch, capsys):
    vault = Vault(tmp_path / "vault")
    write_notes(vault, range(10))
    assert main(["index", str(vault.root), "--db", str(db_path), "-q"]) == 0
    committed = dump_database(db_path)
    write_notes(vault, range(10, 60))
    capsys.readouterr()

    def little_room(conn: apsw.Connection) -> None:
        (pages,) = conn.execute("PRAGMA page_count").fetchone()
        conn.execute(f"PRAGMA max_page_count = {pages + 4}")  # a disk with 16 KiB left

    monkeypatch.setattr(apsw, "connection_hooks", [*apsw.connection_hooks, little_room])
    assert main(["index", str(vault.root), "--db", str(db_path), "-q"]) == 4
    captured = capsys.readouterr()
    err = one_line(captured.err)
    assert err.startswith(f"mindtui: {db_path}: the disk is full") and "Free some space" in err
    assert captured.out == ""
    monkeypatch.setattr(apsw, "connection_hooks", [h for h in apsw.connection_hooks if h is not little_room])

    assert integrity(db_path) == "ok"
    kept = dump_database(db_path)
    for note in committed["notes"]:
        assert note in kept["notes"]  # nothing committed before was lost
    assert main(["index", str(vault.root), "--db", str(db_path), "-q"]) == 0  # space freed: it completes
    clean = tmp_path / "clean.db"
    assert main(["index", str(vault.root), "--db", str(clean), "-q"]) == 0
    assert dump_database(db_path) == dump_database(clean)
    assert main(["status", "--db", str(db_path), "--json"]) == 0  # the job history records the failed step
    status = capsys.readouterr().out
    assert '"status": "failed"' in status or '"status": "interrupted"' in status


# -- an I/O error -------------------------------------------------------------------------------

def _tiny_file_size_limit() -> None:
    """In the child: every write past the 32nd byte of any file fails (EFBIG) instead of a signal."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (32, 32))


def test_an_io_error_is_one_line_exit_4_and_the_next_run_completes(tmp_path, db_path):
    vault = Vault(tmp_path / "vault")
    write_notes(vault, range(5))
    assert main(["index", str(vault.root), "--db", str(db_path), "-q"]) == 0
    write_notes(vault, range(5, 15))
    command = [sys.executable, "-m", "mindtui", "index", str(vault.root), "--db", str(db_path), "-q"]
    failed = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300,
                            preexec_fn=_tiny_file_size_limit, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert failed.returncode == 4, failed.stderr
    err = one_line(failed.stderr)
    assert err.startswith(f"mindtui: {db_path}: the disk reported an I/O error") and "Check the disk" in err
    assert integrity(db_path) == "ok" and note_count(db_path) >= 5
    assert main(["index", str(vault.root), "--db", str(db_path), "-q"]) == 0
    assert note_count(db_path) == 15


# -- read-only -----------------------------------------------------------------------------------

@pytest.fixture
def shared_dir(monkeypatch):
    """A folder another user can reach (pytest's own are private), with the settings the child reads."""
    base = Path(tempfile.mkdtemp(prefix="mindtui-ro-"))
    base.chmod(0o755)
    (base / "config.yaml").write_text("", encoding="utf-8")
    monkeypatch.setenv("MINDTUI_CONFIG_FILE", str(base / "config.yaml"))
    monkeypatch.setenv("MINDTUI_DATA_DIR", str(base / "data"))
    yield base
    for folder in (base, *base.rglob("*")):
        if folder.is_dir():
            folder.chmod(0o755)
    shutil.rmtree(base)


def run_without_write_access(argv: list[str], out_dir: Path) -> tuple[int, str, str]:
    """`mindtui ARGV` in a forked child that may not write the test's files: as root it becomes
    `nobody` (the files stay root's, mode 644/755); otherwise the caller removed the write bits."""
    out, err = out_dir / "child.out", out_dir / "child.err"
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 70
        try:
            sys.stdout, sys.stderr = open(out, "w", encoding="utf-8"), open(err, "w", encoding="utf-8")
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            code = main(argv)
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out.read_text(encoding="utf-8"), err.read_text(encoding="utf-8")


def indexed_database(shared_dir: Path) -> tuple[Path, Path]:
    vault = Vault(shared_dir / "vault")
    write_notes(vault, range(6))
    db = shared_dir / "store" / "mindtui.db"
    assert main(["index", str(vault.root), "--db", str(db), "-q"]) == 0
    # The same commands once with write access: their imports are loaded before the child drops root.
    for argv in (["search", "word3x7", "--mode", "fts"], ["note", "n002"], ["status"]):
        assert main([*argv, "--db", str(db), "--json"]) == 0
    assert not Path(str(db) + "-wal").exists()  # closed cleanly: nothing waits in a write-ahead log
    return vault.root, db


def reading_works(db: Path, out_dir: Path) -> None:
    code, out, err = run_without_write_access(["search", "word3x7", "--mode", "fts", "--db", str(db)], out_dir)
    assert code == 0 and "n003" in out, err
    code, out, err = run_without_write_access(["note", "n002", "--db", str(db)], out_dir)
    assert code == 0 and "word2x5" in out, err
    code, out, err = run_without_write_access(["status", "--db", str(db), "--audience", "agent"], out_dir)
    assert code == 0 and "notes" in out, err


def test_a_database_file_that_cannot_be_written_is_read_and_a_write_says_why(shared_dir, capsys):
    vault, db = indexed_database(shared_dir)
    db.chmod(0o444)
    db.parent.chmod(0o777)  # the folder stays writable: the lock, -shm and -wal files can be made
    Path(str(db) + ".lock").unlink()
    before = db.read_bytes()
    reading_works(db, shared_dir)
    code, out, err = run_without_write_access(["index", str(vault), "--db", str(db), "-q"], shared_dir)
    assert code == 4 and out == ""
    assert one_line(err).startswith(f"mindtui: {db}: the database is read-only here")
    assert db.read_bytes() == before


def test_a_read_only_folder_is_read_and_a_job_names_the_lock_it_cannot_create(shared_dir, capsys):
    vault, db = indexed_database(shared_dir)
    db.chmod(0o444)
    db.parent.chmod(0o555)  # no -shm, -wal or lock file can be made here: the file is read as immutable
    before, files = db.read_bytes(), sorted(db.parent.iterdir())  # the lock file (root's) left by the index
    reading_works(db, shared_dir)
    code, out, err = run_without_write_access(["index", str(vault), "--db", str(db), "-q"], shared_dir)
    assert code == 4
    assert one_line(err).startswith(f"mindtui: {db}.lock: permission denied")
    assert db.read_bytes() == before and sorted(db.parent.iterdir()) == files


def test_the_read_only_setting_reads_and_refuses_every_write(sample_vault, db_path, monkeypatch, capsys):
    assert main(["index", str(sample_vault.root), "--db", str(db_path), "-q"]) == 0
    before = dump_database(db_path)
    monkeypatch.setenv("MINDTUI_DATABASE__READ_ONLY", "true")
    capsys.readouterr()
    assert main(["search", "Zettelkasten", "--db", str(db_path), "--mode", "fts"]) == 0
    assert main(["neighbours", "Zettelkasten", "--db", str(db_path)]) == 0
    assert main(["knowledge", "list", "--db", str(db_path)]) == 0
    capsys.readouterr()
    assert main(["index", str(sample_vault.root), "--db", str(db_path), "-q"]) == 4
    assert "database.read_only is set" in one_line(capsys.readouterr().err)
    assert main(["curate", "refresh", "--db", str(db_path)]) == 4
    assert "read-only" in one_line(capsys.readouterr().err)
    monkeypatch.delenv("MINDTUI_DATABASE__READ_ONLY")
    assert dump_database(db_path) == before


# -- what the OS says ---------------------------------------------------------------------------

def real_os_error(action) -> OSError:
    try:
        action()
    except OSError as exc:
        return exc
    raise AssertionError("the OS did not refuse")


def test_os_failures_become_one_line_database_errors_naming_the_file_the_os_names(tmp_path):
    from mindtui.store.failures import DiskFullError, store_failure

    def fill_the_disk():
        with open("/dev/full", "wb", buffering=0) as full:  # every write: ENOSPC
            full.write(b"x")

    full = store_failure(real_os_error(fill_the_disk), tmp_path / "mindtui.db")
    assert isinstance(full, DiskFullError)
    # write() names no file, and the database may sit on another disk than the one that filled up
    assert str(full).startswith("no space left on the device (writing a file); everything committed before is kept")
    (tmp_path / "folder").mkdir()
    unopenable = real_os_error(lambda: os.open(tmp_path / "folder", os.O_RDWR))  # EISDIR: not a storage failure
    assert store_failure(unopenable, tmp_path / "mindtui.db") is None
    assert store_failure(ValueError("a bug"), tmp_path / "mindtui.db") is None
