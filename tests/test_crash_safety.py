"""Kill the import with SIGKILL at several points; the rerun must equal one clean run."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time

import apsw
import pytest

from conftest import dump_database, run_import

N_NOTES = 600


def generate_vault(vault, seed: int = 7) -> None:
    rng = random.Random(seed)
    words = "Wissen Notiz Verknüpfung Suche Vektor Graph Projekt Quelle Lernen Gedächtnis Index Thema".split()
    for i in range(N_NOTES):
        links = " ".join(f"[[Notiz {rng.randrange(N_NOTES + 20)}]]" for _ in range(4))  # some missing
        sections = "\n\n".join(
            f"## Abschnitt {s}\n" + " ".join(rng.choice(words) for _ in range(rng.randrange(20, 160)))
            for s in range(rng.randrange(1, 4))
        )
        vault.write(f"Ordner {i % 7}/Notiz {i}.md",
                    f"---\naliases: [N{i}]\ntags: [t{i % 5}]\n---\n{sections}\n\nrel: related_to {links}\n",
                    dedent=False)


def count(db_path, sql: str) -> int:
    """Read from the database while the import writes to it (WAL allows that)."""
    if not db_path.exists():
        return 0
    try:
        conn = apsw.Connection(str(db_path), flags=apsw.SQLITE_OPEN_READONLY)
        conn.set_busy_timeout(100)
        try:
            return conn.execute(sql).fetchone()[0]
        finally:
            conn.close()
    except apsw.Error:
        return 0


def notes_in(db_path) -> int:
    return count(db_path, "SELECT count(*) FROM notes")


def import_killed_when(db_path, vault_root, ready) -> bool:
    """Start `mindtui index`, SIGKILL it as soon as ready(db_path) holds; True if it was killed."""
    process = subprocess.Popen(
        [sys.executable, "-m", "mindtui", "index", str(vault_root), "--db", str(db_path), "--quiet"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while process.poll() is None and time.monotonic() < deadline:
        if ready(db_path):
            process.send_signal(signal.SIGKILL)
            process.wait()
            return True
        time.sleep(0.005)
    process.wait()
    return False


@pytest.mark.parametrize("kill_points", [[1, 150, 420], [299]])
def test_killed_cold_import_then_rerun_equals_clean(vault, tmp_path, kill_points):
    generate_vault(vault)
    clean = tmp_path / "clean.db"
    run_import(clean, vault.root)

    crashed = tmp_path / "crashed" / "mindtui.db"
    killed = [import_killed_when(crashed, vault.root, lambda db, n=point: notes_in(db) >= n)
              for point in kill_points]
    assert any(killed), "the import finished before it could be killed; the test proves nothing"
    assert 0 < notes_in(crashed) < N_NOTES or not killed[-1]
    run_import(crashed, vault.root)
    assert dump_database(crashed) == dump_database(clean)


def test_killed_incremental_import_then_rerun_equals_clean(vault, tmp_path):
    generate_vault(vault)
    crashed = tmp_path / "crashed.db"
    run_import(crashed, vault.root)
    # Many changes at once: rewrite half the notes, delete some, add the missing targets.
    for i in range(0, N_NOTES, 2):
        vault.write(f"Ordner {i % 7}/Notiz {i}.md", f"Neu geschrieben, verweist auf [[Notiz {i + 1}]].\n")
    for i in range(1, 60, 2):
        vault.remove(f"Ordner {i % 7}/Notiz {i}.md")
    for i in range(N_NOTES, N_NOTES + 20):
        vault.write(f"Neu/Notiz {i}.md", "Jetzt gibt es mich.\n")
    clean = tmp_path / "clean.db"
    run_import(clean, vault.root)

    # Kill once 100 rewritten notes are in (the table then holds old and new versions).
    rewritten = "SELECT count(*) FROM notes WHERE word_count < 8"
    assert import_killed_when(crashed, vault.root, lambda db: count(db, rewritten) >= 100)
    run_import(crashed, vault.root)
    assert dump_database(crashed) == dump_database(clean)
