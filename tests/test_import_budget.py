"""An import with a time budget (jobs.import_budget_s) stops reading and parsing the changed
files once it is spent, writes what it parsed and leaves the rest to the next run: run after run
parses each changed file once, holds back deletions until the run that writes everything, and
the last run ends in the database one unbudgeted import gives."""

from __future__ import annotations

import shutil

from conftest import dump_database, run_import
from test_relink_changed import anchor_rows

from mindtui.config import load_settings
from mindtui.jobs.runner import ImportBudget, run_job
from mindtui.vault import note_reader
from mindtui.vault import importer as importer_module

NOTES = 350


def budgeted_runs(db_path, vault, monkeypatch) -> list[int]:
    """Budgeted import runs until one ends the import: the files each parsed."""
    parses: list[int] = []
    parse = note_reader.parse_file
    monkeypatch.setattr(note_reader, "parse_file", lambda *args: parses.append(1) or parse(*args))
    settings = load_settings().with_values({"jobs": {"import_budget_s": 0.001}})
    per_run: list[int] = []
    while True:
        before = len(parses)
        result = run_job("index", settings, db_path=db_path, vault=vault.root, steps=["import"])
        assert result.ok, result.as_dict()
        per_run.append(len(parses) - before)
        assert len(per_run) < 20, per_run
        if not result.steps[0].report.get("remaining"):
            return per_run


def write_notes(vault, word: str) -> None:
    for number in range(NOTES):
        vault.write(f"Notes/Note {number:03d}.md",
                    f"# Note {number}\n\n{word} {number}, linking [[Note {(number + 1) % NOTES:03d}]] and [[Moved]].\n")


def test_each_run_parses_only_what_it_writes(vault, db_path, monkeypatch):
    write_notes(vault, "first")
    per_run = budgeted_runs(db_path, vault, monkeypatch)
    assert len(per_run) >= 3 and sum(per_run) == NOTES, per_run  # each file parsed once, not once a run
    assert max(per_run) <= ImportBudget.FREE_NOTES, per_run


def test_budgeted_runs_with_renames_and_deletions_end_as_one_import(vault, db_path, tmp_path, monkeypatch):
    write_notes(vault, "first")
    vault.write("A/Moved.md", "---\naliases: [Shifted]\n---\n# Moved\n\nTo be renamed to a path read last.\n")
    vault.write("A/Gone.md", "# Gone\n\nTo be deleted; it links [[Note 001]].\n")
    run_import(db_path, vault.root)
    write_notes(vault, "second")
    vault.rename("A/Moved.md", "Z/Moved far.md")  # sorted after every edit: not reached by the first runs
    vault.remove("A/Gone.md")
    one_run = tmp_path / "one-run.db"
    shutil.copy(db_path, one_run)
    run_import(one_run, vault.root)
    per_run = budgeted_runs(db_path, vault, monkeypatch)
    assert dump_database(db_path) == dump_database(one_run)
    assert anchor_rows(db_path) == anchor_rows(one_run)
    assert len(per_run) >= 3 and sum(per_run) == NOTES + 1, per_run
