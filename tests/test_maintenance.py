"""The nightly's maintenance step and the storage figures of `mindtui status`."""

from __future__ import annotations

from mindtui.audience import Audience
from mindtui.config import load_settings
from mindtui.jobs.runner import run_job
from mindtui.service import Service
from mindtui.store import open_database


def fts_segments(db_path) -> int:
    """b-tree segments of the chunk full-text index (FTS5 keeps one row per segment in its structure)."""
    conn = open_database(db_path)
    try:
        return conn.execute("SELECT count(*) FROM chunks_fts_idx").fetchone()[0]
    finally:
        conn.close()


def test_maintain_merges_the_full_text_segments_and_reports_seconds(vault, db_path):
    settings = load_settings().with_values({"db": str(db_path)})
    for i in range(6):  # six imports, six transactions: six level-0 segments at least
        vault.write(f"N{i}.md", f"# Notiz {i}\n\nText über Segmente und Wörter {i}.\n")
        assert run_job("index", settings, db_path=db_path, vault=vault.root).ok
    before = fts_segments(db_path)
    result = run_job("nightly", settings, db_path=db_path, vault=vault.root, steps=["maintain"])
    assert result.ok and result.steps[0].seconds > 0
    report = result.steps[0].report
    assert report["fts_optimized"] == ["chunks_fts", "knowledge_fts"] and report["db_bytes"] > 0
    assert fts_segments(db_path) < before


def test_status_reports_bytes_per_note_and_chunk_to_the_owner_only(sample_vault, db_path):
    settings = load_settings().with_values({"db": str(db_path)})
    assert run_job("index", settings, db_path=db_path, vault=sample_vault.root).ok
    with Service(settings, audience=Audience.OWNER) as owner:
        status = owner.status()
    storage = status["storage"]
    assert storage["bytes_per_note"] == round(storage["db_bytes"] / status["notes_total"])
    assert storage["bytes_per_chunk"] == round(storage["db_bytes"] / status["chunks_total"])
    with Service(settings, audience=Audience.AGENT) as agent:
        assert "storage" not in agent.status()
