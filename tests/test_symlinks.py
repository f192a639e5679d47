"""Symlinks: followed inside the vault (each file indexed once, loops skipped), not followed out
of it unless import.follow_external_symlinks; every skipped link is a warning."""

from __future__ import annotations

import os

from mindtui.store import open_database

from conftest import run_import


def paths(db_path) -> set[str]:
    conn = open_database(db_path)
    try:
        return {row[0] for row in conn.execute("SELECT path FROM notes")}
    finally:
        conn.close()


def reasons(report) -> dict[str, str]:
    return {w.path: w.reason for w in report.warnings}


def test_links_inside_the_vault_are_followed_once(vault, db_path):
    vault.write("Echt/Notiz.md", "Echt.\n")
    vault.write(".versteckt/Quelle.md", "Nur über den Link erreichbar.\n")
    os.symlink(vault.root / ".versteckt", vault.root / "Verlinkt")  # a folder reached only through the link
    os.symlink(vault.root / "Echt", vault.root / "A-Zweitweg")  # sorts before Echt: still indexed as Echt/
    os.symlink(vault.root / "Echt" / "Notiz.md", vault.root / "Kopie.md")
    os.symlink(vault.root, vault.root / "Echt" / "Schleife")  # a loop back to the root
    report = run_import(db_path, vault.root)
    assert paths(db_path) == {"Echt/Notiz.md", "Verlinkt/Quelle.md"}
    why = reasons(report)
    assert "already" in why["A-Zweitweg"] and "indexed already" in why["Kopie.md"]
    assert "symlink loop" in why["Echt/Schleife"]


def test_links_out_of_the_vault_only_when_configured(tmp_path, vault, db_path):
    outside = tmp_path / "anderswo"
    outside.mkdir()
    (outside / "Fremd.md").write_text("Gehört nicht zum Vault.\n", encoding="utf-8")
    (tmp_path / "Lose.md").write_text("Eine einzelne Datei draußen.\n", encoding="utf-8")
    vault.write("Haupt.md", "Haupt.\n")
    os.symlink(outside, vault.root / "Extern")
    os.symlink(tmp_path / "Lose.md", vault.root / "Einzeln.md")
    report = run_import(db_path, vault.root)
    assert paths(db_path) == {"Haupt.md"}
    why = reasons(report)
    for link in ("Extern", "Einzeln.md"):
        assert "outside the vault: not followed" in why[link] and "follow_external_symlinks" in why[link]
    report = run_import(db_path, vault.root, follow_external_symlinks=True)
    assert paths(db_path) == {"Haupt.md", "Extern/Fremd.md", "Einzeln.md"}
    assert not [w for w in report.warnings if "outside the vault" in w.reason]
