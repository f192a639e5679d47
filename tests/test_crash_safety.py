"""Kill the import with SIGKILL at several points; the rerun must equal one clean run."""

from __future__ import annotations

import random
import signal
import subprocess
import sys

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
    conn = apsw.Connection(str(db_path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute(sql).fetchone()[0]
    finally:
        conn.close()


def notes_in(db_path) -> int:
    return count(db_path, "SELECT count(*) FROM notes") if db_path.exists() else 0


# `mindtui index` in a child process that SIGKILLs itself at a chosen point of the import's own work:
#   note N    right after the N-th note row is inserted, before its chunks and edges (mid-transaction);
#   commit N  right after the N-th call of WriteBatches.commit (the N-th group of notes committed).
# Counting the import's own calls makes the kill land at the same point on any machine.
IMPORT_KILLED_AT = """
import os, signal, sys
from mindtui.cli import main
from mindtui.store import batch, notes

point, when = sys.argv[1], int(sys.argv[2])
calls = 0

def killing_after(original):
    def wrapper(*args, **kwargs):
        global calls
        result = original(*args, **kwargs)
        calls += 1
        if calls == when:
            os.kill(os.getpid(), signal.SIGKILL)
        return result
    return wrapper

if point == "note":
    notes.insert_note = killing_after(notes.insert_note)
else:
    batch.WriteBatches.commit = killing_after(batch.WriteBatches.commit)
main(["index", sys.argv[3], "--db", sys.argv[4], "--quiet"])
sys.exit(3)  # the import ended before the kill point
"""


def import_killed_at(db_path, vault_root, point: str, when: int) -> None:
    """Run `mindtui index` and kill it at the `when`-th `point` ("note" or "commit")."""
    done = subprocess.run([sys.executable, "-c", IMPORT_KILLED_AT, point, str(when), str(vault_root), str(db_path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, f"not killed at {point} {when}: exit {done.returncode} {done.stderr}"


@pytest.mark.parametrize("kill_points", [[("note", 1), ("commit", 1), ("note", 420)], [("note", 299)]])
def test_killed_cold_import_then_rerun_equals_clean(vault, tmp_path, kill_points):
    generate_vault(vault)
    clean = tmp_path / "clean.db"
    run_import(clean, vault.root)

    crashed = tmp_path / "crashed" / "mindtui.db"
    for point, when in kill_points:
        import_killed_at(crashed, vault.root, point, when)
        if point == "commit":  # a committed part stays after the kill
            assert 0 < notes_in(crashed) < N_NOTES
    # Each rerun resumes: notes committed before a kill carry this parser's fingerprint and are
    # not written again (so the kill points count each run's own remaining writes).
    committed = notes_in(crashed)
    assert committed < N_NOTES
    report = run_import(crashed, vault.root)
    assert (report.notes_added, report.notes_unchanged) == (N_NOTES - committed, committed)
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

    # Killed in the middle of the 150th rewritten note; the groups committed before it stay (a group
    # holds at most 100 items: 30 deletions and 70 notes at the latest), so the table then holds
    # old and new versions side by side.
    import_killed_at(crashed, vault.root, "note", 150)
    new_versions = count(crashed, "SELECT count(*) FROM notes WHERE word_count < 8")  # rewritten or new
    assert 0 < new_versions < 150
    run_import(crashed, vault.root)
    assert dump_database(crashed) == dump_database(clean)
