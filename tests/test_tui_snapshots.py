"""Every screen at 80x24 (an SSH terminal) and 200x60 (a big one), on a fixed database (the
sample vault without vectors, job runs at a fixed time). `pytest --snapshot-update
tests/test_tui_snapshots.py` rewrites them after an intended change of the screens; look at the
SVGs before committing (rsvg-convert turns one into a PNG)."""

from __future__ import annotations

import pytest
from tui_support import build_fixed_db, owner_service, pilot_app, settle

from mindtui.store import open_database

SIZES = pytest.mark.parametrize("size", [(80, 24), (200, 60)], ids=["80x24", "200x60"])


@pytest.fixture
def service(sample_vault, db_path):
    build_fixed_db(sample_vault.root, db_path)
    conn = open_database(db_path)
    try:
        with conn:  # the time each step took, in the reports the Jobs mode shows: fixed too
            conn.execute("UPDATE job_runs SET report = json_set(report, '$.seconds', 0.5)"
                         " WHERE json_extract(report, '$.seconds') IS NOT NULL")
    finally:
        conn.close()
    with owner_service(db_path) as service:
        yield service


tui = pilot_app


def keys(*pressed: str, note: str | None = None):
    """A run_before that opens `note` (if given), presses the keys and waits for the workers."""
    async def run_before(pilot):
        # The start's workers first: the status line is read once, at the start. A search typed
        # before that read ends starts the model's (failing) load, and a slow machine then read
        # "model unavailable" instead of "model not loaded".
        await settle(pilot)
        if note:
            pilot.app.open_note(note)
            await settle(pilot)
        await pilot.press(*pressed)
        await settle(pilot)

    return run_before


@SIZES
def test_search_mode(service, snap_compare, size):
    assert snap_compare(tui(service), terminal_size=size, run_before=keys(*"Vergessenskurve", "ctrl+r"))


@SIZES
def test_note_mode(service, snap_compare, size):
    assert snap_compare(tui(service), terminal_size=size, run_before=keys(note="Zettelkasten"))


@SIZES
def test_note_mode_link_picker(service, snap_compare, size):
    assert snap_compare(tui(service), terminal_size=size, run_before=keys("l", note="Zettelkasten"))


@SIZES
def test_curation_mode(service, snap_compare, size):
    assert snap_compare(tui(service), terminal_size=size, run_before=keys("tab", "3"))


@SIZES
def test_curation_confirm_writes(service, snap_compare, size):
    """pick on the ambiguous link: the rewritten line of its note as a diff, y to write it (not
    create: its template puts the time of day in the new note)."""
    async def run_before(pilot):
        await keys("tab", "3")(pilot)
        while pilot.app.screen.selected().kind != "ambiguous_link":
            await pilot.press("down")
        await keys("p", "enter")(pilot)
    assert snap_compare(tui(service), terminal_size=size, run_before=run_before)


@SIZES
def test_jobs_mode(service, snap_compare, size):
    assert snap_compare(tui(service), terminal_size=size, run_before=keys("tab", "4"))


@SIZES
def test_jobs_mode_with_a_job_in_progress(service, snap_compare, size):
    """A nightly's steps as its events report them: done, running with counts, waiting (idle)."""
    from mindtui.tui.jobs_screen import JobsScreen

    async def run_before(pilot):
        await keys("tab", "4")(pilot)
        for event in ({"event": "start", "job": "nightly", "pid": 4242,
                       "steps": ["import", "embed", "graph", "consolidate", "gaps"]},
                      {"event": "step", "step": "import"}, {"event": "step_done", "step": "import", "status": "ok"},
                      {"event": "step", "step": "embed"},
                      {"event": "progress", "step": "embed", "done": 1234, "total": 5678, "rate": 41.5, "eta_s": 107}):
            pilot.app.screen.post_message(JobsScreen.JobEvent(event))
        await settle(pilot)

    assert snap_compare(tui(service), terminal_size=size, run_before=run_before)


@SIZES
def test_knowledge_mode(service, snap_compare, size):
    assert snap_compare(tui(service), terminal_size=size, run_before=keys("tab", "5"))


@SIZES
def test_knowledge_form(service, snap_compare, size):
    assert snap_compare(tui(service), terminal_size=size, run_before=keys("tab", "5", "a"))


@SIZES
def test_help(service, snap_compare, size):
    assert snap_compare(tui(service), terminal_size=size, run_before=keys("tab", "question_mark"))
