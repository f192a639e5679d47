"""A cold import writes its rows without the secondary indexes and builds them after; it checkpoints
the write-ahead log less often. Neither may change what the store ends with, whatever stops the run."""

from __future__ import annotations

import json

import apsw
import pytest

from conftest import dump_database, run_import
from test_crash_safety import generate_vault, import_killed_at
from test_import_stream import import_with, write_vault

from mindtui.cli import main
from mindtui.config import load_settings
from mindtui.errors import Cancelled
from mindtui.progress import CancelToken
from mindtui.store import deferred_indexes, open_database
from mindtui.store import notes as note_store
from mindtui.store.meta import get_meta
from mindtui.vault.importer import VaultImporter
from mindtui.vault.types import load_type_registry


def indexes(conn: apsw.Connection) -> set[str]:
    return {name for (name,) in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL")}


def fresh_indexes(tmp_path) -> set[str]:
    conn = open_database(tmp_path / "fresh.db")
    try:
        return indexes(conn)
    finally:
        conn.close()


def test_a_cold_import_writes_its_notes_without_secondary_indexes_and_ends_with_them(vault, db_path, tmp_path,
                                                                                     monkeypatch):
    write_vault(vault)
    during = []
    real = note_store.insert_note
    monkeypatch.setattr(note_store, "insert_note", lambda conn, note: during.append(indexes(conn)) or real(conn, note))
    run_import(db_path, vault.root)
    wanted = fresh_indexes(tmp_path)
    assert {"edges_owner", "edges_target", "chunks_content_hash", "note_links_resolved", "note_names_key"} <= wanted
    assert all(not (seen & {"edges_owner", "chunks_content_hash", "note_names_key"}) for seen in during)
    conn = open_database(db_path)
    try:
        assert indexes(conn) == wanted and get_meta(conn, deferred_indexes.DEFERRED_KEY) is None
    finally:
        conn.close()

    during.clear()  # an import into a store that holds notes keeps its indexes while it writes
    vault.write("A/Note 00.md", "# Changed\n\nSee [[Note 01]].\n")
    run_import(db_path, vault.root)
    assert during == [wanted]


def test_the_rows_are_those_of_an_import_that_keeps_its_indexes(vault, tmp_path, monkeypatch):
    write_vault(vault)
    bulk, kept = tmp_path / "bulk.db", tmp_path / "kept.db"
    import_with(bulk, vault, batch_notes=3)
    real = deferred_indexes.deferred
    monkeypatch.setattr(deferred_indexes, "deferred", lambda conn, enabled: real(conn, False))
    import_with(kept, vault, batch_notes=3)
    assert dump_database(bulk) == dump_database(kept)


@pytest.mark.parametrize("point, when", [("note", 5), ("commit", 2)])
def test_a_cold_import_killed_without_its_indexes_gets_them_back_on_the_rerun(vault, tmp_path, point, when, capsys):
    generate_vault(vault)
    clean, crashed = tmp_path / "clean.db", tmp_path / "crashed.db"
    run_import(clean, vault.root)
    import_killed_at(crashed, vault.root, point, when)
    conn = apsw.Connection(str(crashed), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        assert "edges_owner" not in indexes(conn)  # killed while they were dropped
        assert "edges_owner" in dict(json.loads(get_meta(conn, deferred_indexes.DEFERRED_KEY)))
    finally:
        conn.close()
    assert "edges_owner" in owed_report(crashed, capsys)  # the owner is told, until an import builds them
    run_import(crashed, vault.root)
    assert dump_database(crashed) == dump_database(clean)  # the schema included
    assert owed_report(crashed, capsys) == ""


def owed_report(db, capsys) -> str:
    """`mindtui status`'s indexes owed (--json), and its text line (checked here against the JSON)."""
    capsys.readouterr()
    assert main(["--db", str(db), "--json", "status"]) == 0
    owed = json.loads(capsys.readouterr().out)["indexes_owed"]
    assert main(["--db", str(db), "status"]) == 0
    text = capsys.readouterr().out
    assert ("indexes owed" in text) == bool(owed) and (f"indexes owed   {len(owed)}:" in text or not owed)
    return " ".join(owed)


def test_a_cancelled_cold_import_builds_its_indexes_before_it_stops(vault, db_path, tmp_path, monkeypatch):
    write_vault(vault)
    token = CancelToken()
    real = note_store.insert_note
    monkeypatch.setattr(note_store, "insert_note", lambda conn, note: real(conn, note) or token.cancel())
    settings = load_settings()
    conn = open_database(db_path)
    try:
        with pytest.raises(Cancelled):
            VaultImporter(conn, vault.root, load_type_registry(settings.types_file), settings, cancel=token).run()
        assert 0 < note_store.note_count(conn) and indexes(conn) == fresh_indexes(tmp_path)
        assert get_meta(conn, deferred_indexes.DEFERRED_KEY) is None
    finally:
        conn.close()



def test_a_cold_import_runs_no_delete_that_can_find_nothing(vault, db_path):
    """Into an empty store a delete finds nothing, yet each costs a statement (and a b-tree
    search): 100k of them in the anchor rows alone."""
    write_vault(vault)
    settings = load_settings()
    conn = open_database(db_path)
    deletes = []
    conn.exec_trace = lambda cursor, sql, bindings: (sql.lstrip().upper().startswith("DELETE")
                                                     and deletes.append(sql)) or True
    try:
        VaultImporter(conn, vault.root, load_type_registry(settings.types_file), settings).run()
    finally:
        conn.close()
    assert deletes == ["DELETE FROM meta WHERE key = ?"]  # the deferred indexes built again
