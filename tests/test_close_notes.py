"""The nightly's link suggestions are incremental (issue 21 item 4): only notes whose note vectors
changed since the last refresh, and their neighbours, are looked up again, and the pairs equal
those of a refresh from scratch. Plumbing with the hash-seeded fake embedder (named so)."""

from __future__ import annotations

import pytest
from fakes import DeterministicFakeEmbedder

from conftest import run_import
from mindtui.config import load_settings
from mindtui.curation import close_notes
from mindtui.curation.kinds import subject
from mindtui.curation.suggestions import LinkSuggestion
from mindtui.models.sweep import run_embed_sweep
from mindtui.store import close_pairs, curation_store, open_database
from mindtui.store import note_vectors as note_vector_store

FAKE = "fake-hash-embedder"
TOPICS = ["Gärten", "Wälder", "Flüsse", "Berge", "Städte", "Meere", "Wüsten", "Inseln", "Täler", "Seen",
          "Moore", "Felder"]
NEIGHBOURS = 2


def write_notes(vault, changed: dict[str, str] | None = None):
    for i, topic in enumerate(TOPICS):
        vault.write(f"N{i:02d}.md", (changed or {}).get(f"N{i:02d}.md", f"# {topic}\n\nEine Notiz über {topic}.\n"))


def synced(vault, db_path):
    run_import(db_path, vault.root)
    conn = open_database(db_path)
    try:
        run_embed_sweep(conn, DeterministicFakeEmbedder(), batch_size=8)
    finally:
        conn.close()


@pytest.fixture
def looked_up(monkeypatch):
    """The notes each refresh asked a vector query for (the real query still runs)."""
    asked: list[list] = [[]]
    real = note_vector_store.nearest_notes

    def spy(conn, query, model_id, k):
        asked[-1].append(query.tobytes())
        return real(conn, query, model_id, k)
    monkeypatch.setattr(note_vector_store, "nearest_notes", spy)

    def refresh(conn) -> set[str]:
        asked.append([])
        close_notes.refresh_close_pairs(conn, FAKE, -1.0, NEIGHBOURS)
        by_vector = {v.tobytes(): n for n, v in note_vector_store.vectors_of(conn, ids(conn), FAKE).items()}
        assert len(set(asked[-1])) == len(asked[-1])  # no note asked twice
        return {by_vector[q] for q in asked[-1]}
    return refresh


def ids(conn) -> list[str]:
    return [n for (n,) in conn.execute("SELECT note_id FROM notes ORDER BY path")]


def note_id(conn, path: str) -> str:
    return conn.execute("SELECT note_id FROM notes WHERE path = ?", (path,)).fetchone()[0]


def rows(conn) -> set[tuple[str, str, float]]:
    return {(a, b, round(c, 6)) for a, b, c in conn.execute("SELECT note_id, other_id, cosine FROM note_close_pairs")}


def holders_of(conn, note: str) -> set[str]:
    return {n for (n,) in conn.execute("SELECT note_id FROM note_close_pairs WHERE other_id = ?", (note,))}


def from_scratch(db_path, tmp_path) -> set:
    """The rows a first refresh writes on a copy of the database."""
    import shutil

    copy = tmp_path / "scratch.db"
    conn = open_database(db_path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    shutil.copy(db_path, copy)
    conn = open_database(copy)
    try:
        with conn:
            conn.execute("DELETE FROM meta WHERE key = ?", (close_pairs.SETTINGS_KEY,))
        close_notes.refresh_close_pairs(conn, FAKE, -1.0, NEIGHBOURS)
        return rows(conn)
    finally:
        conn.close()
        copy.unlink()


def test_an_unchanged_vault_looks_up_nothing(vault, db_path, looked_up):
    write_notes(vault)
    synced(vault, db_path)
    conn = open_database(db_path)
    assert looked_up(conn) == set(ids(conn))  # the first refresh: every note
    first = rows(conn)
    assert len(first) == NEIGHBOURS * len(TOPICS)
    conn.close()
    synced(vault, db_path)  # an import and a sweep that find nothing new
    conn = open_database(db_path)
    assert looked_up(conn) == set() and rows(conn) == first
    assert close_notes.refresh_close_pairs(conn, FAKE, -1.0, NEIGHBOURS) == {"changed": 0, "neighbours": 0}
    conn.close()


def test_a_changed_note_looks_up_only_it_and_its_neighbours_and_equals_a_refresh_from_scratch(
        vault, db_path, tmp_path, looked_up):
    write_notes(vault)
    synced(vault, db_path)
    conn = open_database(db_path)
    looked_up(conn)
    changed = note_id(conn, "N03.md")
    before = holders_of(conn, changed)
    conn.close()
    write_notes(vault, {"N03.md": "# Berge\n\nGanz anders: über Vulkane, Lava und Asche.\n"})
    synced(vault, db_path)
    conn = open_database(db_path)
    asked = looked_up(conn)
    after = holders_of(conn, changed)
    # Its neighbours: the notes that named its old vector, and those that name its new one now.
    assert asked == {changed} | before | after
    assert len(asked) < len(TOPICS)
    assert rows(conn) == from_scratch(db_path, tmp_path)

    deleted = note_id(conn, "N05.md")
    held = holders_of(conn, deleted)
    conn.close()
    (vault.root / "N05.md").unlink()  # a deleted note: its vector goes, the notes that named it look again
    synced(vault, db_path)
    conn = open_database(db_path)
    assert looked_up(conn) == held
    assert all(deleted not in (n, other) for n, other, _ in rows(conn))
    assert rows(conn) == from_scratch(db_path, tmp_path)
    conn.close()


def test_a_refresh_killed_between_pages_goes_on_where_it_stopped(vault, db_path, tmp_path, monkeypatch):
    write_notes(vault)
    synced(vault, db_path)
    conn = open_database(db_path)
    close_notes.refresh_close_pairs(conn, FAKE, -1.0, NEIGHBOURS)
    conn.close()
    write_notes(vault, {f"N{i:02d}.md": f"# Neu {i}\n\nEin neuer Text {i} über Sterne.\n" for i in (1, 4, 7, 10)})
    synced(vault, db_path)
    monkeypatch.setattr(close_notes, "PAGE", 2)
    real_write, writes = close_pairs.write, []

    def dies(conn, found, gone):
        writes.append(1)
        if len(writes) == 2:
            raise KeyboardInterrupt  # as a kill: the second page's transaction is lost
        real_write(conn, found, gone)
    monkeypatch.setattr(close_pairs, "write", dies)
    conn = open_database(db_path)
    with pytest.raises(KeyboardInterrupt):
        close_notes.refresh_close_pairs(conn, FAKE, -1.0, NEIGHBOURS)
    assert close_pairs.due_count(conn) > 0  # what was not written is still due
    monkeypatch.setattr(close_pairs, "write", real_write)
    close_notes.refresh_close_pairs(conn, FAKE, -1.0, NEIGHBOURS)  # the rerun
    assert close_pairs.due_count(conn) == 0
    assert rows(conn) == from_scratch(db_path, tmp_path)
    conn.close()


def test_the_suggestion_cards_come_from_the_kept_pairs_and_a_second_refresh_asks_nothing(
        vault, db_path, looked_up, monkeypatch):
    """detect gives candidates for the pairs with a card and for the best that could get a new
    one (curation.max_new_suggestions more than there are cards), not for every close pair."""
    from mindtui.curation.refresh import refresh

    write_notes(vault)
    synced(vault, db_path)
    settings = load_settings(overrides={"curation": {"suggestion_min_cosine": -1.0, "max_new_suggestions": 3}})
    monkeypatch.setattr("mindtui.curation.suggestions.NEIGHBOURS", NEIGHBOURS)
    conn = open_database(db_path)
    kind = LinkSuggestion()
    first = kind.detect(conn, settings, {})
    best = {}
    for a, b, cosine in rows(conn):
        best[tuple(sorted((a, b)))] = max(cosine, best.get(tuple(sorted((a, b))), -2.0))
    ranked = sorted(best, key=lambda p: -best[p])
    assert len(best) > 6  # no two of these notes link each other: every pair may get a card

    def pairs_of(found) -> list:
        return sorted(tuple(sorted(c.payload[s]["note_id"] for s in ("source", "target"))) for c in found)
    assert pairs_of(first) == sorted(ranked[:3])
    assert looked_up(conn) == set()  # detect looked every note up already: nothing changed since
    assert refresh(conn, settings, kinds=["link_suggestion"]).kinds["link_suggestion"].new == 3
    assert pairs_of(kind.detect(conn, settings, {})) == sorted(ranked[:6])  # the 3 with a card, 3 more
    far = ranked[-1]  # a card for the farthest pair (as if it had been close once): still given
    with conn:
        curation_store.insert_item(conn, kind.name, subject(pair=list(far)), far[0],
                                   {"source": {"note_id": far[0]}, "target": {"note_id": far[1]}}, 0.2, "now")
    assert pairs_of(kind.detect(conn, settings, {})) == sorted(ranked[:7] + [far])
    conn.close()


def test_many_notes_due_are_looked_up_together_with_the_same_result(vault, db_path, tmp_path, monkeypatch):
    write_notes(vault)
    synced(vault, db_path)
    one_by_one = from_scratch(db_path, tmp_path)
    monkeypatch.setattr(close_notes, "BULK", 1)  # the matrix way from one note due
    monkeypatch.setattr(note_vector_store, "nearest_notes", None)  # no vector query at all
    together = from_scratch(db_path, tmp_path)
    assert {(a, b) for a, b, _ in together} == {(a, b) for a, b, _ in one_by_one}
    cosines = {(a, b): c for a, b, c in one_by_one}
    assert all(abs(cosines[(a, b)] - c) < 1e-5 for a, b, c in together)


def test_a_note_turned_ai_none_is_never_suggested_even_before_the_sweep_drops_its_vector(vault, db_path):
    """Its close pairs stay until the sweep removes its note vector (a missing model, a spent
    budget): meanwhile no link suggestion may come from the model's reading of its old text."""
    write_notes(vault)
    synced(vault, db_path)
    settings = load_settings(overrides={"curation": {"suggestion_min_cosine": -1.0, "max_new_suggestions": 50}})
    conn = open_database(db_path)
    try:
        note_id = conn.execute("SELECT note_id FROM notes WHERE path = 'N00.md'").fetchone()[0]
        assert any(note_id in (c.payload["source"]["note_id"], c.payload["target"]["note_id"])
                   for c in LinkSuggestion().detect(conn, settings, {}))
    finally:
        conn.close()
    write_notes(vault, {"N00.md": "---\nai_processing: none\n---\n# Gärten\n\nEine Notiz über Gärten.\n"})
    run_import(db_path, vault.root)  # and no embed sweep after it
    conn = open_database(db_path)
    try:
        later = LinkSuggestion().detect(conn, settings, {})
        assert later  # the other notes still get theirs
        assert not [c for c in later if note_id in (c.payload["source"]["note_id"], c.payload["target"]["note_id"])]
        assert all(note_id not in pair for pair in close_pairs.cosines_of(conn, [tuple(sorted((note_id, other)))
                   for (other,) in conn.execute("SELECT note_id FROM notes WHERE note_id != ?", (note_id,))]))
    finally:
        conn.close()


def test_a_refresh_holds_the_write_lock_for_a_small_page_of_queries_at_a_time(vault, db_path, monkeypatch):
    """One query a note takes ~15 ms at a million chunks: 200 in one transaction held the TUI's own
    writes (an open recorded, a curation answer) ~3 s behind it."""
    monkeypatch.setattr(close_notes, "QUERY_PAGE", 5)
    write_notes(vault)
    synced(vault, db_path)
    per_transaction: list[int] = []
    real_immediate, real_nearest = close_notes.immediate, note_vector_store.nearest_notes

    def counted(conn):
        per_transaction.append(0)
        return real_immediate(conn)

    def spy(conn, query, model_id, k):
        per_transaction[-1] += 1
        return real_nearest(conn, query, model_id, k)

    monkeypatch.setattr(close_notes, "immediate", counted)
    monkeypatch.setattr(note_vector_store, "nearest_notes", spy)
    conn = open_database(db_path)
    try:
        close_notes.refresh_close_pairs(conn, FAKE, -1.0, NEIGHBOURS)
        assert sum(per_transaction) == len(TOPICS) and max(per_transaction) == 5
        assert len(rows(conn)) == NEIGHBOURS * len(TOPICS)
    finally:
        conn.close()
