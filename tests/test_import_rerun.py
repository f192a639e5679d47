"""What a re-run does not redo at 100k notes (issue 21 item 5): count every reference and edge
when it wrote nothing, or read a hub's every incoming line again when a note linking it was
edited elsewhere. The results stay those of a clean import."""

from __future__ import annotations

from conftest import dump_database, run_import
from test_relink_changed import anchor_rows

from mindtui.store import anchors as anchor_store
from mindtui.store import edges as edge_store
from mindtui.vault.note_builder import path_note_id


def write_hub_vault(vault) -> None:
    vault.write("Hub.md", "# Hub\n\nEveryone links here.\n")
    for n in range(6):
        vault.write(f"Notes/N{n}.md", f"# N{n}\n\nAbout [[Hub]] and [[N{(n + 1) % 6}]].\n\nMore text of {n}.\n")


def test_a_run_that_writes_nothing_takes_the_last_totals(vault, db_path, monkeypatch):
    write_hub_vault(vault)
    first = run_import(db_path, vault.root)
    counted = []
    real = edge_store.edge_counts
    monkeypatch.setattr(edge_store, "edge_counts", lambda conn: counted.append(1) or real(conn))
    again = run_import(db_path, vault.root)
    assert counted == [] and again.notes_unchanged == 7
    totals = ("notes_total", "chunks_total", "explicit_total", "wikilink_total", "structure_total", "unresolved_total")
    assert [getattr(again, k) for k in totals] == [getattr(first, k) for k in totals]
    vault.write("Notes/N9.md", "# N9\n\n[[Hub]] [[Nowhere]]\n")
    changed = run_import(db_path, vault.root)
    assert counted == [1] and (changed.notes_total, changed.unresolved_total) == (8, first.unresolved_total + 1)


def test_an_edit_away_from_a_link_leaves_its_targets_anchor_rows_alone(vault, db_path, tmp_path, monkeypatch):
    write_hub_vault(vault)
    run_import(db_path, vault.root)
    refreshed: list[set] = []
    real = anchor_store.incoming_lines
    monkeypatch.setattr(anchor_store, "incoming_lines", lambda conn, only=None: refreshed.append(only) or real(conn, only))
    hub = path_note_id("Hub.md")

    with (vault.root / "Notes/N2.md").open("a") as handle:
        handle.write("\nA line without links.\n")
    assert run_import(db_path, vault.root).notes_changed == 1
    assert refreshed and all(hub not in only for only in refreshed)
    clean = tmp_path / "clean.db"
    run_import(clean, vault.root)
    assert dump_database(db_path)["edges"] == dump_database(clean)["edges"]
    assert anchor_rows(db_path) == anchor_rows(clean)

    refreshed.clear()
    vault.write("Notes/N3.md", "# N3\n\nNow it says [[Hub]] in other words.\n")
    run_import(db_path, vault.root)
    assert any(hub in only for only in refreshed)
    clean_again = tmp_path / "clean-again.db"
    run_import(clean_again, vault.root)
    assert anchor_rows(db_path) == anchor_rows(clean_again)
