"""Finding a note by name: one indexed resolver (store.names) for every NOTE argument and every
knowledge `about`, filled with each note and by migration 0010 for a database from before."""

from __future__ import annotations

import pytest

from conftest import run_import
from mindtui.audience import Audience
from mindtui.errors import NoteNotFound
from mindtui.graph.neighbours import find_note
from mindtui.knowledge.subjects import matching_notes
from mindtui.store import open_database
from mindtui.store.names import alias_owners, notes_named


@pytest.fixture
def named(vault, db_path):
    vault.write("Café/Über Kaffee.md", "---\naliases: [\"ÄRGER  Zwei\", Bohne]\n---\n# Kaffee\n")
    vault.write("Getränke/Tee.md", "---\ntitle: Grüner Tee\naliases: [Bohne]\n---\nTee.\n")
    vault.write("Geheim.md", "---\nprivate: true\naliases: [Versteck]\n---\nGeheim.\n")
    run_import(db_path, vault.root)
    conn = open_database(db_path)
    yield conn
    conn.close()


def _names(conn) -> list[tuple]:
    return conn.execute("SELECT key, how, n.path FROM note_names JOIN notes n USING (note_id) ORDER BY 1, 2, 3").fetchall()


def test_every_way_to_name_a_note_is_one_index_lookup(named):
    assert [n.path for n in notes_named(named, "café/über kaffee.md")[1]] == ["Café/Über Kaffee.md"]
    assert notes_named(named, "tee")[0] == "file name"  # its title is "Grüner Tee"
    assert notes_named(named, "grüner   tee")[0] == "title"  # no case, single spaces
    assert notes_named(named, "ärger zwei")[0] == "alias"
    how, both = notes_named(named, "Bohne")
    assert (how, [n.path for n in both]) == ("alias", ["Café/Über Kaffee.md", "Getränke/Tee.md"])
    assert notes_named(named, "nichts") == ("", [])
    plan = " ".join(str(row) for row in named.execute(
        "EXPLAIN QUERY PLAN SELECT note_id FROM note_names WHERE key = ?", ("x",)))
    assert "note_names_key" in plan  # an index search, not a scan of every note


def test_find_note_and_knowledge_about_answer_alike(named):
    for name in ("Über Kaffee", "Grüner Tee", "ärger zwei", "Getränke/Tee.md"):
        assert [find_note(named, name).note_id] == [n.note_id for n in matching_notes(named, name)]
    with pytest.raises(NoteNotFound, match="ambiguous: 2 notes match by alias: Café/Über Kaffee.md, Getränke/Tee.md"):
        find_note(named, "Bohne")


def test_a_name_written_exactly_as_one_namesake_has_it_names_that_one(named, vault, db_path):
    """Names compare without case, so `Konzepte/SQLite.md` and `Konzepte/sqlite.md` (two files on
    a case-sensitive disk) are namesakes; the path as written names one of them, a third spelling
    neither."""
    vault.write("Konzepte/SQLite.md", "# SQLite\nDie Datenbank.\n")
    vault.write("Konzepte/sqlite.md", "# sqlite\nDas Kommando.\n")
    run_import(db_path, vault.root)
    for name, path in (("Konzepte/SQLite.md", "Konzepte/SQLite.md"), ("Konzepte/sqlite", "Konzepte/sqlite.md"),
                       ("SQLite", "Konzepte/SQLite.md"), ("sqlite", "Konzepte/sqlite.md")):
        assert find_note(named, name).path == path
        assert [n.path for n in matching_notes(named, name)] == [path]
    with pytest.raises(NoteNotFound, match="ambiguous: 2 notes match by path"):
        find_note(named, "konzepte/SQLITE.md")
    with pytest.raises(NoteNotFound, match="ambiguous: 2 notes match by title"):
        find_note(named, "Sqlite")


def test_names_follow_their_note(named, vault, db_path):
    vault.write("Getränke/Tee.md", "---\ntitle: Schwarztee\n---\nTee.\n")
    vault.remove("Café/Über Kaffee.md")
    run_import(db_path, vault.root)
    assert notes_named(named, "Grüner Tee") == ("", []) and notes_named(named, "Bohne") == ("", [])
    assert notes_named(named, "Schwarztee")[0] == "title"
    assert {path for *_, path in _names(named)} == {"Getränke/Tee.md", "Geheim.md"}


def test_an_agent_finds_no_hidden_note_by_any_name(named, db_path):
    assert [n.path for n in notes_named(named, "Versteck")[1]] == ["Geheim.md"]
    agent = open_database(db_path, audience=Audience.AGENT)
    try:
        assert notes_named(agent, "Versteck") == notes_named(agent, "Geheim") == ("", [])
        assert alias_owners(agent, ["Versteck"]) == {}
        # Nor by reading the table itself: an agent's connection has a view of it, like every table.
        assert agent.execute("SELECT count(*) FROM note_names WHERE key IN ('versteck', 'geheim')").fetchone() == (0,)
    finally:
        agent.close()


def test_migration_fills_the_names_of_a_database_from_before(named, db_path):
    """The backfill keys names exactly as the importer does (casefold, single spaces: SQL's
    lower() would keep Ü and Ä)."""
    written = _names(named)
    from mindtui.store.migrate import apply_migrations, load_migrations

    migrations = load_migrations()
    names = next(m.version for m in migrations if "note_names" in m.name)
    named.execute(f"DROP TABLE note_names; PRAGMA user_version = {names - 1}")  # as before that migration
    apply_migrations(named, db_path, migrations[:names])  # it alone, again
    named.execute(f"PRAGMA user_version = {len(migrations)}")
    assert _names(named) == written
