"""The importer streams: it reads every changed file's head first (ids, names, renames), then
parses and writes the files a batch at a time, holding no more than one batch of parsed notes.
The result does not depend on the batch size: links across batches, aliases, renames, duplicate
ids and ambiguous names come out as one batch of the whole vault gives."""

from __future__ import annotations

import weakref

import pytest

from conftest import dump_database
from test_relink_changed import anchor_rows

from mindtui.config import load_settings
from mindtui.store import open_database
from mindtui.vault import note_reader
from mindtui.vault import importer as importer_module
from mindtui.vault.importer import VaultImporter
from mindtui.vault.types import load_type_registry

NOTES = 40


def import_with(db_path, vault, batch_notes: int):
    settings = load_settings()
    conn = open_database(db_path)
    try:
        return VaultImporter(conn, vault.root, load_type_registry(settings.types_file), settings,
                             batch_notes=batch_notes).run()
    finally:
        conn.close()


def write_vault(vault) -> None:
    for n in range(NOTES):
        folder = ("A", "B", "C")[n % 3]
        aliases = f"---\naliases: [Nick {n}]\n---\n" if n % 4 == 0 else ""
        declared = f"---\nid: shared-{n % 5}\n---\n" if n % 7 == 1 else ""  # duplicate ids: the first path wins
        vault.write(f"{folder}/Note {n:02d}.md",
                    f"{aliases or declared}# Note {n}\n\nSee [[Note {(n + 17) % NOTES:02d}]], [[Nick {(n + 8) % NOTES}]],"
                    f" [[Same]] and [[{('A', 'B', 'C')[(n + 1) % 3]}/Note {(n + 29) % NOTES:02d}|there]].\n\n"
                    f"Some words of note {n} about topic {n % 6}, long enough to be compared when it moves.\n")
    vault.write("A/Same.md", "# Same\n\nOne of two notes named Same: links to it are ambiguous.\n")
    vault.write("C/Same.md", "# Same\n\nThe other one.\n")


def change_vault(vault) -> None:
    vault.rename("A/Note 00.md", "Z/Note zero.md")  # the same bytes, read in the last batch
    text = (vault.root / "B/Note 01.md").read_text()
    vault.remove("B/Note 01.md")
    vault.write("Y/Note one moved.md", text + "\nEdited while it moved.\n")  # similar text: still the same note
    vault.remove("C/Same.md")  # [[Same]] resolves now
    vault.remove("C/Note 02.md")
    vault.write("A/Note 05.md", "---\naliases: [Nick 5, Five]\n---\n# Five\n\nNow named [[Same]] and [[Nick 9]].\n")
    vault.write("D/New.md", "---\nid: shared-1\n---\n# New\n\nLinks [[Note zero]], [[Five]], [[Note 39]].\n")


def test_batch_size_does_not_change_the_result(vault, tmp_path):
    write_vault(vault)
    small, whole = tmp_path / "small.db", tmp_path / "whole.db"
    import_with(small, vault, batch_notes=3)
    import_with(whole, vault, batch_notes=10_000)
    assert dump_database(small) == dump_database(whole)
    assert anchor_rows(small) == anchor_rows(whole)

    change_vault(vault)
    small_report = import_with(small, vault, batch_notes=3)
    whole_report = import_with(whole, vault, batch_notes=10_000)
    assert small_report.notes_renamed == whole_report.notes_renamed == 2
    assert dump_database(small) == dump_database(whole)
    assert anchor_rows(small) == anchor_rows(whole)


def test_at_most_one_batch_of_parsed_notes_is_held(vault, db_path, monkeypatch):
    write_vault(vault)
    alive, most = [0], []
    parse = note_reader.parse_file

    def released() -> None:
        alive[0] -= 1

    def counted(*args):
        item = parse(*args)
        weakref.finalize(item, released)
        alive[0] += 1
        most.append(alive[0])
        return item

    monkeypatch.setattr(note_reader, "parse_file", counted)
    report = import_with(db_path, vault, batch_notes=4)
    assert report.notes_added == NOTES + 2 and not report.warnings
    assert len(most) == NOTES + 2, len(most)
    assert max(most) <= 4 + 1, max(most)  # one batch, and the first of the next


@pytest.mark.parametrize("pragma, value", [
    ("cache_size", -importer_module.CACHE_MIB * 1024),
    # A checkpoint copies every page committed since the last one: the hot index and full-text
    # pages of a long import were copied every 1,000 pages.
    ("wal_autocheckpoint", importer_module.WAL_PAGES)])
def test_notes_are_written_with_a_larger_page_cache_and_fewer_checkpoints_given_back_after(
        vault, db_path, monkeypatch, pragma, value):
    """At 100k notes the random inserts into the edge, reference and chunk indexes missed
    SQLite's default 2 MB page cache on most rows."""
    from mindtui.store import notes as note_store

    write_vault(vault)
    seen = []
    real = note_store.insert_note
    monkeypatch.setattr(note_store, "insert_note",
                        lambda conn, note: seen.append(conn.execute(f"PRAGMA {pragma}").fetchone()[0]) or real(conn, note))
    settings = load_settings()
    conn = open_database(db_path)
    try:
        (before,) = conn.execute(f"PRAGMA {pragma}").fetchone()
        VaultImporter(conn, vault.root, load_type_registry(settings.types_file), settings).run()
        assert conn.execute(f"PRAGMA {pragma}").fetchone()[0] == before != value
    finally:
        conn.close()
    assert set(seen) == {value}


def test_a_file_edited_between_the_two_reads_ends_as_a_clean_import_would(vault, tmp_path, monkeypatch):
    """Its ids and names were settled from the first read's bytes; written from the second it
    would carry the scan's size and time, and the next run would take it for current."""
    import os

    from conftest import run_import

    db, clean = tmp_path / "m.db", tmp_path / "clean.db"
    vault.write("A.md", "---\naliases: [Alt]\n---\n# A\n\nText.\n")
    vault.write("B.md", "# B\n\nSiehe [[Neu]].\n")
    run_import(db, vault.root)
    vault.write("A.md", "---\naliases: [Alt]\n---\n# A\n\nText, bearbeitet.\n")
    parse = note_reader.NoteReader.parse

    def edited_meanwhile(self, file, stored):
        if file.path == "A.md":  # the owner saves again between the head and the parse
            vault.write("A.md", "---\naliases: [Neu]\n---\n# A\n\nText, nochmal bearbeitet.\n")
            stat = os.stat(vault.root / "A.md")
            os.utime(vault.root / "A.md", ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
        return parse(self, file, stored)

    monkeypatch.setattr(note_reader.NoteReader, "parse", edited_meanwhile)
    racing = run_import(db, vault.root)
    monkeypatch.setattr(note_reader.NoteReader, "parse", parse)
    assert any("changed while it was imported" in w for w in map(str, racing.warnings))
    run_import(db, vault.root)  # the next run (the watcher's, after that save)
    run_import(clean, vault.root)
    assert dump_database(db) == dump_database(clean)


def test_rows_are_built_before_the_write_lock_is_taken(vault, db_path, monkeypatch):
    """Chunking and stemming a batch inside its transaction held the write lock through them
    (a search logging itself waited) and split each batch over more commits."""
    write_vault(vault)
    settings = load_settings()
    conn = open_database(db_path)
    locked = []
    real = note_reader.build_rows
    monkeypatch.setattr(note_reader, "build_rows", lambda *args: locked.append(conn.in_transaction) or real(*args))
    try:
        VaultImporter(conn, vault.root, load_type_registry(settings.types_file), settings, batch_notes=7).run()
    finally:
        conn.close()
    assert len(locked) == NOTES + 2 and not any(locked)
