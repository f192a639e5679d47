"""Bad input is a warning with path and reason; every other note still imports."""

from __future__ import annotations

import os

import pytest

from mindtui.store import open_database

from conftest import run_import


def paths_in(db_path) -> set[str]:
    conn = open_database(db_path, migrate=False)
    try:
        return {p for (p,) in conn.execute("SELECT path FROM notes")}
    finally:
        conn.close()


def reasons(report) -> dict[str, str]:
    return {w.path: w.reason for w in report.warnings}


@pytest.fixture
def messy_vault(vault):
    vault.write("gut.md", "Eine gute Notiz mit [[kaputt]] und [[binär]].\n")
    vault.write("kaputt.md", "---\ntitle: [nicht geschlossen\ntags: x\n---\nKörper bleibt [[gut]].\n")
    vault.write_bytes("latin1.md", "Grüße aus Köln".encode("latin-1"))
    vault.write_bytes("binär.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    vault.write_bytes("leer.md", b"")
    vault.write("doppelt-a.md", "---\nid: gleich\n---\nA\n")
    vault.write("doppelt-b.md", "---\nid: gleich\n---\nB\n")
    big = vault.root / "riesig.md"
    with big.open("wb") as handle:
        handle.write(b"# Riesig\n")
        handle.write((b"Zeile mit Text und [[gut]].\n") * (20 * 1024 * 1024 // 28))
    (vault.root / "Ordner").mkdir()
    os.symlink(vault.root, vault.root / "Ordner" / "schleife")
    os.symlink(vault.root / "gibt-es-nicht.md", vault.root / "tot.md")
    vault.write(".obsidian/workspace.md", "nicht indexieren")
    vault.write("bild.png", "kein markdown")
    return vault


def test_every_bad_file_is_a_warning_and_the_rest_imports(messy_vault, db_path):
    report = run_import(db_path, messy_vault.root)
    why = reasons(report)
    assert "malformed YAML" in why["kaputt.md"]
    assert "invalid UTF-8" in why["latin1.md"]
    assert "binary" in why["binär.md"]
    assert why["leer.md"] == "empty file"
    assert "too large" in why["riesig.md"]
    assert "symlink loop" in why["Ordner/schleife"]
    assert "broken symlink" in why["tot.md"]
    assert "duplicate frontmatter id" in why["doppelt-b.md"]
    assert paths_in(db_path) == {"gut.md", "kaputt.md", "latin1.md", "leer.md", "doppelt-a.md", "doppelt-b.md"}
    # the malformed note still has its body and its link
    conn = open_database(db_path, migrate=False)
    edges = conn.execute("SELECT count(*) FROM edges e JOIN notes s ON s.note_id = e.source_id"
                         " WHERE s.path = 'kaputt.md' AND e.kind = 'links_to'").fetchone()[0]
    unresolved = dict(conn.execute("SELECT target_raw, reason FROM unresolved_links").fetchall())
    conn.close()
    assert edges == 1
    assert unresolved == {"binär": "out_of_corpus"}  # exists, but could not be indexed


def test_bad_files_do_not_stop_a_second_run(messy_vault, db_path):
    run_import(db_path, messy_vault.root)
    report = run_import(db_path, messy_vault.root)
    assert report.notes_unchanged == 6 and report.notes_added == 0
    assert "too large" in reasons(report)["riesig.md"]  # still reported, still skipped


def test_size_limit_is_configurable(vault, db_path):
    vault.write("mittel.md", "x" * 5000)
    assert run_import(db_path, vault.root, max_file_bytes=1000).notes_total == 0
    assert run_import(db_path, vault.root, max_file_bytes=10_000).notes_total == 1


def test_a_note_that_becomes_binary_is_removed(vault, db_path):
    vault.write("wird-binär.md", "Text\n")
    run_import(db_path, vault.root)
    vault.write_bytes("wird-binär.md", b"\x00\x01\x02")
    report = run_import(db_path, vault.root)
    assert report.notes_deleted == 1 and paths_in(db_path) == set()


def test_exclude_patterns_make_links_out_of_corpus(vault, db_path):
    vault.write("Archiv/alt.md", "alt\n")
    vault.write("neu.md", "siehe [[alt]]\n")
    report = run_import(db_path, vault.root, exclude=["Archiv/**"])
    assert paths_in(db_path) == {"neu.md"}
    assert report.out_of_corpus_total == 1 and report.missing_total == 0


def test_missing_vault_is_a_clear_error(tmp_path, db_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        run_import(db_path, tmp_path / "nirgends")
