"""What only the database holds hangs on note_id: renames, moves, unreadable folders and mass
deletions must not cost a note its identity."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from mindtui.cli import main
from mindtui.config import load_settings
from mindtui.errors import MassDeleteRefused
from mindtui.jobs.runner import graph_step
from mindtui.store import open_database

from conftest import dump_database, run_import

TEXT = ("Die Vergessenskurve beschreibt, wie schnell Gelerntes ohne Wiederholung verblasst. Ebbinghaus lernte "
        "sinnlose Silben und prüfte sich nach Stunden und Tagen. Wiederholung in wachsenden Abständen hält es.\n")


def ids(db_path) -> dict[str, str]:
    conn = open_database(db_path)
    try:
        return dict(conn.execute("SELECT path, note_id FROM notes").fetchall())
    finally:
        conn.close()


def pairs(db_path) -> list[tuple]:
    conn = open_database(db_path)
    try:
        return conn.execute("SELECT note_a, note_b, weight FROM search_pairs ORDER BY 1, 2").fetchall()
    finally:
        conn.close()


def learn_pair(db_path, first: str, second: str) -> None:
    """Record a search pair between two notes as an owner search would."""
    from mindtui.store.search_store import log_search

    conn = open_database(db_path)
    try:
        log_search(conn, "test", "hybrid", [first, second], "owner", learn_pairs=True)
    finally:
        conn.close()


@pytest.fixture
def known(vault, db_path):
    vault.write("Lernen/Vergessenskurve.md", TEXT)
    vault.write("Lernen/Spaced Repetition.md", "Karteikarten in wachsenden Abständen wiederholen.\n")
    vault.write("Mit Id.md", "---\nid: 20231129-kurve\n---\nEine Notiz mit eigener Id.\n")
    for n in range(6):
        vault.write(f"Rest/Notiz {n}.md", f"Notiz Nummer {n} über etwas anderes, Thema {n}.\n")
    run_import(db_path, vault.root)
    before = ids(db_path)
    learn_pair(db_path, before["Lernen/Vergessenskurve.md"], before["Lernen/Spaced Repetition.md"])
    return before


def test_a_moved_note_keeps_its_id_and_its_search_pairs(known, vault, db_path):
    vault.rename("Lernen/Vergessenskurve.md", "Archiv/2025/Ebbinghaus-Kurve.md")
    vault.rename("Mit Id.md", "Ordner/Umbenannt.md")
    report = run_import(db_path, vault.root)
    after = ids(db_path)
    assert after["Archiv/2025/Ebbinghaus-Kurve.md"] == known["Lernen/Vergessenskurve.md"]
    assert after["Ordner/Umbenannt.md"] == known["Mit Id.md"] == "20231129-kurve"
    assert (report.notes_renamed, report.notes_deleted, report.notes_added) == (2, 0, 0)
    kept = pairs(db_path)
    assert len(kept) == 1 and kept[0][2] == 1
    conn = open_database(db_path)  # the nightly graph step prunes pairs of deleted notes only
    try:
        from mindtui.jobs.runner import StepContext

        graph_step(StepContext(conn, load_settings(), db_path, vault.root))
    finally:
        conn.close()
    assert pairs(db_path) == kept


def test_a_rename_that_also_edits_the_text_keeps_its_id(known, vault, db_path):
    vault.remove("Lernen/Vergessenskurve.md")
    vault.write("Lernen/Ebbinghaus.md", TEXT.replace("Tagen", "Wochen") + "Ein neuer Satz am Ende.\n")
    run_import(db_path, vault.root)
    assert ids(db_path)["Lernen/Ebbinghaus.md"] == known["Lernen/Vergessenskurve.md"]


def test_a_new_note_with_other_text_is_not_taken_for_a_rename(known, vault, db_path):
    vault.remove("Lernen/Vergessenskurve.md")
    vault.write("Lernen/Kochen.md", "Ein Rezept für Zwiebelkuchen mit Speck und Kümmel.\n")
    report = run_import(db_path, vault.root)
    assert ids(db_path)["Lernen/Kochen.md"] != known["Lernen/Vergessenskurve.md"]
    assert (report.notes_renamed, report.notes_deleted, report.notes_added) == (0, 1, 1)


def test_two_identical_new_files_take_the_old_id_once(known, vault, db_path):
    vault.remove("Lernen/Vergessenskurve.md")
    vault.write("A/Kopie.md", TEXT)
    vault.write("B/Kopie.md", TEXT)
    run_import(db_path, vault.root)
    after = ids(db_path)
    assert after["A/Kopie.md"] == known["Lernen/Vergessenskurve.md"]  # the first path in sort order
    assert after["B/Kopie.md"] not in known.values()


def test_gaining_a_frontmatter_id_moves_the_search_pairs_along(known, vault, db_path):
    vault.write("Lernen/Vergessenskurve.md", "---\nid: kurve\n---\n" + TEXT)
    run_import(db_path, vault.root)
    assert ids(db_path)["Lernen/Vergessenskurve.md"] == "kurve"
    (pair,) = pairs(db_path)
    assert "kurve" in pair[:2] and known["Lernen/Vergessenskurve.md"] not in pair[:2]


def test_a_folder_that_cannot_be_listed_keeps_its_notes(known, vault, db_path, monkeypatch):
    real_scandir = os.scandir

    def scandir(path):
        if str(path).endswith("/Rest"):
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    report = run_import(db_path, vault.root)
    assert ids(db_path) == known and report.notes_deleted == 0
    assert any(w.path == "Rest" and "cannot list folder" in w.reason for w in report.warnings)


def test_an_unmounted_symlink_target_keeps_its_notes(tmp_path, vault, db_path):
    outside = tmp_path / "usb"
    (outside / "Extern").mkdir(parents=True)
    (outside / "Extern" / "Datei.md").write_text("Auf dem Stick.\n", encoding="utf-8")
    vault.write("Haupt.md", "Hauptnotiz.\n")
    os.symlink(outside / "Extern", vault.root / "Extern")
    run_import(db_path, vault.root, follow_external_symlinks=True)
    before = ids(db_path)
    assert "Extern/Datei.md" in before
    shutil.rmtree(outside)  # the disk is gone; the link dangles
    report = run_import(db_path, vault.root, follow_external_symlinks=True)
    assert ids(db_path) == before and report.notes_deleted == 0
    assert any(w.path == "Extern" and "broken symlink" in w.reason for w in report.warnings)


def test_a_mass_deletion_is_refused_unless_allowed(known, vault, db_path, capsys):
    for n in range(5):
        vault.remove(f"Rest/Notiz {n}.md")  # 5 of 9 notes
    vault.write("Neu.md", "Eine neue Notiz kommt trotzdem hinein.\n")
    with pytest.raises(MassDeleteRefused, match="refusing to delete 5 of 9 notes"):
        run_import(db_path, vault.root)
    after = ids(db_path)
    assert set(known) <= set(after) and "Neu.md" in after  # nothing deleted, the rest imported
    assert main(["index", str(vault.root), "--db", str(db_path), "-q"]) == 1
    printed = capsys.readouterr()
    assert "import.max_delete_fraction" in printed.err and set(known) <= set(ids(db_path))
    # Said once: the reason on stderr, the result line on stdout without it.
    assert (printed.out + printed.err).count("refusing to delete") == 1
    assert printed.out.startswith("import: failed in ") and "see stderr" in printed.out
    assert main(["status", "--db", str(db_path)]) == 0  # the last runs, each failure with its reason
    assert "index/import  failed: refusing to delete 5 of " in capsys.readouterr().out
    assert main(["index", str(vault.root), "--db", str(db_path), "-q", "--allow-mass-delete"]) == 0
    assert not any(p.startswith("Rest/Notiz") and p != "Rest/Notiz 5.md" for p in ids(db_path))


def test_an_empty_vault_folder_deletes_nothing(vault, db_path):
    vault.write("Eins.md", "eins\n")
    vault.write("Zwei.md", "zwei\n")
    run_import(db_path, vault.root)
    for name in ("Eins.md", "Zwei.md"):
        vault.remove(name)
    with pytest.raises(MassDeleteRefused, match="holds no notes now"):
        run_import(db_path, vault.root)
    assert len(ids(db_path)) == 2
    assert run_import(db_path, vault.root, allow_mass_delete=True).notes_total == 0


def test_a_killed_import_with_renames_ends_like_an_uninterrupted_one(vault, tmp_path):
    """Renames are written note by note in grouped transactions: a SIGKILL in the middle, then a
    rerun, gives exactly what one uninterrupted run gives (ids included)."""
    from test_crash_safety import N_NOTES, generate_vault, import_killed_at

    generate_vault(vault)
    start = tmp_path / "start.db"
    run_import(start, vault.root)
    for i in range(0, N_NOTES, 2):  # move half the notes to a new folder, some with an edit
        suffix = " Nachtrag." if i % 4 == 0 else ""
        source = vault.root / f"Ordner {i % 7}/Notiz {i}.md"
        text = source.read_text(encoding="utf-8")
        source.unlink()
        vault.write(f"Umgezogen/Notiz {i}.md", text.replace("\n\nrel:", f"{suffix}\n\nrel:"), dedent=False)
    clean, crashed = tmp_path / "clean.db", tmp_path / "crashed" / "mindtui.db"
    shutil.copy(start, clean)
    crashed.parent.mkdir()
    shutil.copy(start, crashed)
    report = run_import(clean, vault.root)
    assert report.notes_renamed == N_NOTES // 2 and report.notes_deleted == 0
    import_killed_at(crashed, vault.root, "commit", 2)  # SIGKILL right after the second transaction
    conn = open_database(crashed, migrate=False, readonly=True)
    moved = conn.execute("SELECT count(*) FROM notes WHERE path LIKE 'Umgezogen/%'").fetchone()[0]
    conn.close()
    assert 0 < moved < N_NOTES // 2
    run_import(crashed, vault.root)
    assert dump_database(crashed) == dump_database(clean)


def test_refused_mass_delete_is_exit_1_from_the_nightly_job(known, vault, db_path):
    for n in range(6):
        vault.remove(f"Rest/Notiz {n}.md")
    done = subprocess.run([sys.executable, "-m", "mindtui", "--job", "nightly", "--steps", "import", "--vault",
                           str(vault.root), "--db", str(db_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "--allow-mass-delete" in done.stderr
    assert set(known) <= set(ids(db_path))


def test_a_note_that_cannot_be_read_keeps_its_id_against_a_new_claim(tmp_path, vault, db_path):
    """Archiv/ is behind an unmounted link; a new note declaring the same frontmatter id must not
    take that id (nor delete the kept note's row on the way)."""
    outside = tmp_path / "usb"
    outside.mkdir()
    (outside / "Alt.md").write_text("---\nid: X\n---\nAlter Text.\n", encoding="utf-8")
    vault.write("Haupt.md", "Haupt.\n")
    os.symlink(outside, vault.root / "Archiv")
    run_import(db_path, vault.root, follow_external_symlinks=True)
    learn_pair(db_path, "X", ids(db_path)["Haupt.md"])
    shutil.rmtree(outside)
    vault.write("A.md", "---\nid: X\n---\nNeuer Text.\n")
    report = run_import(db_path, vault.root, follow_external_symlinks=True)
    after = ids(db_path)
    assert after["Archiv/Alt.md"] == "X" and after["A.md"] != "X" and len(set(after.values())) == len(after)
    assert any(w.path == "A.md" and "duplicate frontmatter id 'X'" in w.reason for w in report.warnings)
    assert pairs(db_path)[0][2] == 1 and "X" in pairs(db_path)[0][:2]


def test_a_file_that_cannot_be_stat_ed_keeps_its_note(known, vault, db_path, monkeypatch):
    real_scandir = os.scandir

    class Unreadable:
        """A directory entry whose stat fails (a folder listable but not searchable)."""

        def __init__(self, entry):
            self._entry = entry
            self.name, self.path = entry.name, entry.path

        def is_symlink(self):
            return False

        def is_dir(self, follow_symlinks=True):
            return False

        def is_file(self, follow_symlinks=True):
            raise PermissionError(13, "Permission denied")

        def stat(self, follow_symlinks=True):
            raise PermissionError(13, "Permission denied")

    class Listing(list):
        """What os.scandir returns: iterable, and a context manager (pathlib uses it so)."""

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

    def scandir(path="."):
        with real_scandir(path) as entries:
            return Listing(Unreadable(e) if str(path).endswith("/Rest") else e for e in entries)

    monkeypatch.setattr(os, "scandir", scandir)
    report = run_import(db_path, vault.root)
    assert ids(db_path) == known and report.notes_deleted == 0
    assert any(w.path == "Rest/Notiz 0.md" and "cannot stat" in w.reason for w in report.warnings)


def test_a_rename_that_gains_a_frontmatter_id_moves_its_search_pairs(known, vault, db_path):
    vault.remove("Lernen/Vergessenskurve.md")
    vault.write("Archiv/Ebbinghaus.md", "---\nid: ebbinghaus\n---\n" + TEXT)
    report = run_import(db_path, vault.root)
    assert ids(db_path)["Archiv/Ebbinghaus.md"] == "ebbinghaus" and report.notes_renamed == 1
    (pair,) = pairs(db_path)
    assert "ebbinghaus" in pair[:2] and known["Lernen/Spaced Repetition.md"] in pair[:2]
