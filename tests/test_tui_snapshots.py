"""One snapshot per mode at 80x24 on a fixed database (the sample vault without vectors, job
runs at a fixed time). `pytest --snapshot-update tests/test_tui_snapshots.py` rewrites them
after an intended change of the screens; look at the SVGs before committing."""

from __future__ import annotations

import pytest
from tui_support import fixed_service, pilot_app, settle



@pytest.fixture
def service(sample_vault, db_path):
    with fixed_service(sample_vault.root, db_path) as service:
        yield service


tui = pilot_app


def test_search_mode(service, snap_compare):
    async def run_before(pilot):
        await pilot.press(*"Vergessenskurve", "ctrl+r")
        await settle(pilot)

    assert snap_compare(tui(service), terminal_size=(80, 24), run_before=run_before)


def test_note_mode(service, snap_compare):
    async def run_before(pilot):
        pilot.app.open_note("Zettelkasten")
        await settle(pilot)

    assert snap_compare(tui(service), terminal_size=(80, 24), run_before=run_before)


def test_curation_mode(service, snap_compare):
    async def run_before(pilot):
        await pilot.press("tab", "3")
        await settle(pilot)

    assert snap_compare(tui(service), terminal_size=(80, 24), run_before=run_before)


def test_jobs_mode(service, snap_compare):
    async def run_before(pilot):
        await pilot.press("tab", "4")
        await settle(pilot)

    assert snap_compare(tui(service), terminal_size=(80, 24), run_before=run_before)


def test_knowledge_mode(service, snap_compare):
    async def run_before(pilot):
        await pilot.press("tab", "5")
        await settle(pilot)

    assert snap_compare(tui(service), terminal_size=(80, 24), run_before=run_before)
