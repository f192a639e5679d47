"""The embedding sweep's plumbing, with a deterministic fake embedder (no quality claims here)."""

from __future__ import annotations

import pytest
from fakes import DeterministicFakeEmbedder

from mindtui.models.sweep import run_embed_sweep
from mindtui.store import open_database

from conftest import run_import


def vault_with_duplicates(vault):
    vault.write("A.md", "Gleicher Text.\n")
    vault.write("B.md", "Anderer Text über Vektoren.\n")
    vault.write("Privat.md", "---\nai_processing: none\n---\nNicht einbetten.\n")
    vault.write("Ordner/A.md", "Gleicher Text.\n")  # same title and text as A.md: same embedded text


def sweep(db_path, embedder, batch_size=16):
    conn = open_database(db_path)
    try:
        return run_embed_sweep(conn, embedder, batch_size=batch_size)
    finally:
        conn.close()


def count(db_path, sql):
    conn = open_database(db_path)
    try:
        return conn.execute(sql).fetchone()[0]
    finally:
        conn.close()


def test_embeds_each_text_once_and_skips_ai_none(vault, db_path):
    vault_with_duplicates(vault)
    run_import(db_path, vault.root)
    fake = DeterministicFakeEmbedder()
    report = sweep(db_path, fake)
    assert report.embedded == 2 and report.duplicates == 1 and report.excluded == 1
    assert sorted(fake.embedded_texts) == ["A\nGleicher Text.", "B\nAnderer Text über Vektoren."]  # not Privat
    assert count(db_path, "SELECT count(*) FROM vec_chunks") == 2
    assert count(db_path, "SELECT count(DISTINCT chunk_id) FROM chunk_vectors") == 3


def test_second_sweep_embeds_nothing_and_a_change_embeds_only_it(vault, db_path):
    vault_with_duplicates(vault)
    run_import(db_path, vault.root)
    sweep(db_path, DeterministicFakeEmbedder())
    fake = DeterministicFakeEmbedder()
    again = sweep(db_path, fake)
    assert again.embedded == 0 and fake.calls == [] and again.skipped == 3
    vault.write("B.md", "Geänderter Text.\n")
    run_import(db_path, vault.root)
    fake = DeterministicFakeEmbedder()
    changed = sweep(db_path, fake)
    assert changed.embedded == 1 and fake.embedded_texts == ["B\nGeänderter Text."]
    assert changed.removed == 1  # the old text's vector
    assert count(db_path, "SELECT count(*) FROM embeddings") == count(db_path, "SELECT count(*) FROM vec_chunks") == 2


def test_model_change_reembeds_everything_with_a_notice(vault, db_path):
    vault_with_duplicates(vault)
    run_import(db_path, vault.root)
    sweep(db_path, DeterministicFakeEmbedder("model-a"))
    report = sweep(db_path, DeterministicFakeEmbedder("model-b"))
    assert report.embedded == 2 and report.removed == 2
    assert report.notices and "model-a -> model-b" in report.notices[0]
    assert count(db_path, "SELECT count(*) FROM embeddings WHERE model_id = 'model-a'") == 0


def test_batches_commit_one_by_one(vault, db_path):
    for i in range(10):
        vault.write(f"n{i}.md", f"Notiz Nummer {i}.\n")
    run_import(db_path, vault.root)

    class FailsOnThirdBatch(DeterministicFakeEmbedder):
        def embed_passages(self, texts):
            if len(self.calls) == 2:
                raise RuntimeError("killed")
            return super().embed_passages(texts)

    with pytest.raises(RuntimeError, match="killed"):
        sweep(db_path, FailsOnThirdBatch(), batch_size=3)
    assert count(db_path, "SELECT count(*) FROM embeddings") == 6  # two batches kept
    fake = DeterministicFakeEmbedder()
    assert sweep(db_path, fake, batch_size=3).embedded == 4
    assert count(db_path, "SELECT count(*) FROM embeddings") == 10
