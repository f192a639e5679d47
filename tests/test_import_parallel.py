"""Notes parsed and built on worker processes (vault.parallel_notes) give the database one
import in one process gives, warnings included; a worker that dies leaves the rest to the
importer's process."""

from __future__ import annotations

import os

from mindtui.config import load_settings
from mindtui.store import open_database
from mindtui.vault import parallel_notes
from mindtui.vault.importer import VaultImporter
from mindtui.vault.note_reader import NoteReader
from mindtui.vault.types import load_type_registry

from conftest import dump_database

PARENT = os.getpid()


class MarkingReader(NoteReader):
    """Leaves a file for each process that built a note (MARKS, a folder: inherited by workers)."""

    def build(self, task, names):
        open(os.path.join(os.environ["MARKS"], str(os.getpid())), "a").close()
        return super().build(task, names)


class DyingReader(MarkingReader):
    """Kills the worker process that builds Note 013 (in the importer's process it builds it)."""

    def build(self, task, names):
        if task.file.path == "Notes/Note 013.md" and os.getpid() != int(os.environ["IMPORTER_PID"]):
            os._exit(3)
        return super().build(task, names)


def builders(marks) -> set[int]:
    return {int(name) for name in os.listdir(marks)}


def both_ways(vault, tmp_path, monkeypatch, reader: type[NoteReader]):
    """The vault imported in one process and with two workers (their builders marked under
    tmp_path/marks): the two reports."""
    write_vault(vault)
    monkeypatch.setattr(parallel_notes, "PARALLEL_MIN_FILES", 1)
    here = imported(tmp_path / "here.db", vault, workers=0)
    (tmp_path / "marks").mkdir()
    monkeypatch.setenv("MARKS", str(tmp_path / "marks"))
    monkeypatch.setenv("IMPORTER_PID", str(PARENT))  # a worker imports this module again: PARENT is its own
    return here, imported(tmp_path / "there.db", vault, workers=2, reader=reader)


def write_vault(vault) -> None:
    for number in range(40):
        vault.write(f"Notes/Note {number:03d}.md",
                    f"---\naliases: [Alias {number}]\ntags: [t{number % 3}]\n---\n# Note {number}\n\n"
                    f"Text {number} linking [[Note {(number + 1) % 40:03d}]] and [[Alias {(number + 7) % 40}]].\n"
                    f"\n## Part\n\nMore about [[Missing {number % 4}]].\n")
    vault.write("Broken.md", "---\ntitle: [unclosed\n---\nBody with [[Note 001]].\n")
    vault.write_bytes("Bad utf8.md", "Caf\xe9 au lait\n".encode("latin-1") + b"\n[[Note 002]]\n")


def imported(db, vault, workers: int, reader: type[NoteReader] = NoteReader):
    settings = load_settings()
    conn = open_database(db)
    try:
        importer = VaultImporter(conn, vault.root, load_type_registry(settings.types_file), settings, batch_notes=6)
        importer.workers = workers
        importer.reader = reader(importer.registry, importer.options.max_file_bytes, importer.private_paths)
        return importer.run()
    finally:
        conn.close()


def test_notes_built_on_workers_give_the_database_one_process_gives(vault, tmp_path, monkeypatch):
    here, there = both_ways(vault, tmp_path, monkeypatch, MarkingReader)
    assert builders(tmp_path / "marks") - {PARENT}  # workers built the notes, not the importer
    assert PARENT not in builders(tmp_path / "marks")
    assert there.notes_added == here.notes_added == 42
    assert [str(w) for w in there.warnings] == [str(w) for w in here.warnings] and here.warnings
    assert dump_database(tmp_path / "there.db") == dump_database(tmp_path / "here.db")


def test_a_worker_that_dies_leaves_the_rest_to_the_importer(vault, tmp_path, monkeypatch):
    here, there = both_ways(vault, tmp_path, monkeypatch, DyingReader)
    assert PARENT in builders(tmp_path / "marks")  # the importer built what the pool did not
    assert there.notes_added == here.notes_added
    assert dump_database(tmp_path / "there.db") == dump_database(tmp_path / "here.db")
