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


def vault_of_dated_notes(vault, n=12):
    """n notes whose files were last edited one day apart: Note00 oldest, Note{n-1} newest."""
    import os

    for i in range(n):
        path = vault.write(f"Note{i:02d}.md", f"Text der Notiz Nummer {i}.\n")
        stamp = 1_700_000_000 + i * 86_400
        os.utime(path, (stamp, stamp))


def test_the_most_recently_edited_notes_are_embedded_first(vault, db_path):
    vault_of_dated_notes(vault)
    run_import(db_path, vault.root)
    fake = DeterministicFakeEmbedder()
    conn = open_database(db_path)
    try:
        run_embed_sweep(conn, fake, batch_size=3, page_size=5)  # pages smaller than the work: read again
    finally:
        conn.close()
    order = [text.split("\n")[0] for text in fake.embedded_texts]
    assert order == [f"Note{i:02d}" for i in reversed(range(12))]
    assert [len(call) for call in fake.calls] == [3, 2, 3, 2, 2]  # batches never cross a page


class FakeClock:
    """time.monotonic for the sweep: each text embedded takes exactly half a 'second'."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def dated_notes(vault, db_path, monkeypatch):
    """vault_of_dated_notes imported, and the sweep's clock a FakeClock (returned)."""
    import mindtui.models.sweep as sweep_module

    vault_of_dated_notes(vault)
    run_import(db_path, vault.root)
    clock = FakeClock()
    monkeypatch.setattr(sweep_module.time, "monotonic", clock)
    return clock


class ClockedEmbedder(DeterministicFakeEmbedder):
    def __init__(self, clock: FakeClock) -> None:
        super().__init__()
        self.clock = clock

    def embed_passages(self, texts):
        self.clock.now += 0.5 * len(texts)
        return super().embed_passages(texts)


def test_a_budget_stops_between_batches_and_the_next_run_continues(dated_notes, db_path):
    from mindtui.config import load_settings
    from mindtui.search.engine import SearchOptions
    from mindtui.service import Service
    from mindtui.audience import Audience

    clock = dated_notes
    fake = ClockedEmbedder(clock)
    conn = open_database(db_path)
    try:
        # 12 texts, half a second each, batches of up to 16: a 3.2 s budget has room for six
        # texts: a small first batch times a text, the next is cut to the two that still fit.
        report = run_embed_sweep(conn, fake, batch_size=16, budget_s=3.2)
        assert report.stopped_by_budget and report.embedded == 6 and report.remaining == 6
        assert [len(call) for call in fake.calls] == [4, 2]  # the probe batch, then what fits
        assert report.seconds <= 3.2
        assert report.eta_s == 3  # six more texts at two a second
        assert any("6 texts remain" in n for n in report.notices)
        assert [t.split("\n")[0] for t in fake.embedded_texts] == [f"Note{i:02d}" for i in range(11, 5, -1)]
    finally:
        conn.close()
    settings = load_settings().with_values({"db": str(db_path), "search": {"min_cosine": -1.0}})
    from mindtui.models.holder import ModelHolder

    holder = ModelHolder(embedder_factory=lambda settings, say: DeterministicFakeEmbedder())
    with Service(settings, audience=Audience.OWNER, models=holder) as service:
        partial = service.search("Notiz", SearchOptions(log=False))
        assert any("6 passages are not embedded yet" in n for n in partial.notices)
    conn = open_database(db_path)
    try:
        rest = run_embed_sweep(conn, ClockedEmbedder(clock), batch_size=2)
        assert rest.embedded == 6 and not rest.stopped_by_budget and rest.remaining == 0
    finally:
        conn.close()
    with Service(settings, audience=Audience.OWNER, models=holder) as service:
        full = service.search("Notiz", SearchOptions(log=False))
        assert not any("not embedded yet" in n for n in full.notices)


class SlowingEmbedder(ClockedEmbedder):
    """Half a second a text in its first batch (the pace probe), a second a text after it: the
    second batch runs past the budget, as on a machine that got busy in the night."""

    def embed_passages(self, texts):
        if self.calls:
            self.clock.now += 0.5 * len(texts)
        return super().embed_passages(texts)


def test_a_sweep_whose_last_batch_ran_past_the_budget_still_writes_its_notes_vectors(dated_notes, db_path):
    """Note vectors were given only the time left, none after an overrun: a first embedding that
    spans several nights gave no link suggestions night after night."""
    clock = dated_notes
    fake = SlowingEmbedder(clock)
    conn = open_database(db_path)
    try:
        report = run_embed_sweep(conn, fake, batch_size=16, budget_s=3.2)
        assert report.stopped_by_budget and report.embedded == 6 and clock.now > 3.2
        with_vector = {row[0] for row in conn.execute(
            "SELECT n.title FROM note_embeddings ne JOIN notes n ON n.note_id = ne.note_id"
            " JOIN vec_notes v ON v.rowid = ne.note_vector_id")}
        assert with_vector == {f"Note{i:02d}" for i in range(6, 12)}  # the six embedded, no other
        assert report.note_vectors["computed"] == 6
    finally:
        conn.close()


def test_a_cancelled_sweep_leaves_the_count_of_what_is_still_not_embedded(dated_notes, db_path):
    """Searches say how many passages wait for their vectors: after a cancelled run it is what is
    left then, not the count an earlier budgeted run left."""
    from mindtui.errors import Cancelled
    from mindtui.progress import CancelToken
    from mindtui.store.meta import EMBED_REMAINING_KEY, get_meta

    clock = dated_notes
    conn = open_database(db_path)
    try:
        run_embed_sweep(conn, ClockedEmbedder(clock), batch_size=16, budget_s=2.0)  # the probe's 4 texts
        assert get_meta(conn, EMBED_REMAINING_KEY) == "8"
        cancel = CancelToken()

        class CancelledAfterTwo(DeterministicFakeEmbedder):
            def embed_passages(self, texts):
                if len(self.calls) == 1:
                    cancel.cancel()  # the person pressed cancel while the second batch embedded
                return super().embed_passages(texts)

        with pytest.raises(Cancelled):
            run_embed_sweep(conn, CancelledAfterTwo(), batch_size=2, cancel=cancel)
        assert get_meta(conn, EMBED_REMAINING_KEY) == "4"  # 8 - the two batches of two kept
    finally:
        conn.close()


def test_the_budget_setting_reaches_the_nightly_embed_step_and_the_cli(vault, db_path, tmp_path):
    from mindtui.cli import build_parser

    args = build_parser().parse_args(["embed", "--budget", "30"])
    assert args.budget == 30.0
    assert build_parser().parse_args(["--job", "nightly", "--budget", "5"]).budget == 5.0
    assert build_parser().parse_args(["embed"]).budget is None


def test_a_page_of_pending_texts_walks_the_notes_by_mtime_without_sorting_every_chunk(vault, db_path):
    """At 541k chunks, grouping and sorting every pending chunk took 3.4 s a page; the walk along
    notes_mtime costs what it reads (no temporary b-tree for the order)."""
    from mindtui.store import vectors as vector_store

    vault_of_dated_notes(vault)
    run_import(db_path, vault.root)
    conn = open_database(db_path)
    try:
        def plan_of_page(after):
            seen = []
            conn.exec_trace = lambda cursor, sql, bindings: seen.append((sql, bindings)) or True
            _page, cursor = vector_store.pending_chunk_page(conn, "fake-hash-embedder", 5, after)
            conn.exec_trace = None
            sql, bindings = next((s, b) for s, b in seen if "FROM notes n" in s)
            return cursor, " | ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, bindings))

        cursor, first = plan_of_page(None)
        assert cursor is not None  # a full page: the walk goes on from there
        _, second = plan_of_page(cursor)
        for plan in (first, second):
            # Only a note's own chunks are put in order (LAST TERM), never the whole work.
            assert "notes_mtime" in plan and "GROUP BY" not in plan, plan
            assert "TEMP B-TREE FOR ORDER BY" not in plan, plan
        assert "SEARCH n USING INDEX notes_mtime" in second, second  # from the cursor on, not from the top
    finally:
        conn.close()


class EditingEmbedder(DeterministicFakeEmbedder):
    """Edits the vault and imports it while the sweep embeds its first batch (the live vault does)."""

    def __init__(self, edit) -> None:
        super().__init__()
        self.edit = edit

    def embed_passages(self, texts):
        if self.edit is not None:
            edit, self.edit = self.edit, None
            edit()
        return super().embed_passages(texts)


def test_a_note_edited_while_the_sweep_runs_is_embedded_by_the_same_run(vault, db_path):
    vault_of_dated_notes(vault)
    run_import(db_path, vault.root)

    def edit() -> None:
        vault.write("Neu.md", "Geschrieben während der Einbettung.\n")
        vault.write("Note03.md", "Note03 neu geschrieben.\n")
        run_import(db_path, vault.root)

    fake = EditingEmbedder(edit)
    conn = open_database(db_path)
    try:
        report = run_embed_sweep(conn, fake, batch_size=2, page_size=4)
        pending = conn.execute(
            "SELECT count(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM embeddings e"
            " WHERE e.content_hash = c.content_hash)").fetchone()[0]
    finally:
        conn.close()
    assert pending == 0
    assert "Neu\nGeschrieben während der Einbettung." in fake.embedded_texts
    assert "Note03\nNote03 neu geschrieben." in fake.embedded_texts
    assert len(fake.embedded_texts) == len(set(fake.embedded_texts)) == report.embedded


def test_a_note_with_more_chunks_than_a_page_is_embedded_whole(vault, db_path):
    sections = "\n\n".join(f"## Abschnitt {i}\n\n" + " ".join(f"Wort{i}x{j}" for j in range(400))
                             for i in range(9))
    vault.write("Lang.md", sections + "\n")
    vault.write("Kurz.md", "Kurz.\n")
    run_import(db_path, vault.root)
    chunks = count(db_path, "SELECT count(DISTINCT content_hash) FROM chunks")
    assert chunks >= 6  # more than two pages of the size below
    fake = DeterministicFakeEmbedder()
    conn = open_database(db_path)
    try:
        report = run_embed_sweep(conn, fake, batch_size=2, page_size=2)
    finally:
        conn.close()
    assert report.embedded == chunks == len(set(fake.embedded_texts))
