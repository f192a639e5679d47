"""Bad input is a warning with path and reason; every other note still imports."""

from __future__ import annotations

import json
import os

import pytest

from mindtui.store import notes as note_store
from mindtui.store import open_database
from mindtui.vault import note_reader
from mindtui.vault import importer, note_builder

from conftest import run_import
from curation_support import index, settings_for
from mindtui.cli import main


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


def note_row(db_path, path: str):
    conn = open_database(db_path, migrate=False)
    try:
        found = conn.execute("SELECT note_id FROM notes WHERE path = ?", (path,)).fetchone()
        return None if found is None else note_store.load_note(conn, found[0])
    finally:
        conn.close()


def resolved_targets(db_path, path: str) -> list[str]:
    conn = open_database(db_path, migrate=False)
    try:
        return [t for (t,) in conn.execute(
            "SELECT t.path FROM note_links l JOIN notes s ON s.note_id = l.note_id"
            " JOIN notes t ON t.note_id = l.resolved_note_id WHERE s.path = ? ORDER BY l.seq", (path,))]
    finally:
        conn.close()


def chunk_text(db_path, path: str) -> str:
    conn = open_database(db_path, migrate=False)
    try:
        return "\n".join(text for (text,) in conn.execute(
            "SELECT c.text FROM chunks c JOIN notes n ON n.note_id = c.note_id WHERE n.path = ? ORDER BY c.seq",
            (path,)))
    finally:
        conn.close()


def test_an_impossible_date_is_kept_as_text_and_the_rest_of_the_frontmatter_counts(vault, db_path):
    vault.write("gut.md", "Siehe [[datum]].\n")  # aliases do not resolve links (Obsidian's rule)
    vault.write("datum.md", "---\ncreated: 2023-02-30\nupdated: 2023-02-28\ntags: [reise]\naliases: [Termin]\n"
                            "---\nText mit [[gut]].\n")
    report = run_import(db_path, vault.root)
    why = reasons(report)["datum.md"]
    assert "'2023-02-30' is not a real date" in why and "line 2" in why and "kept as text" in why
    note = note_row(db_path, "datum.md")
    assert note.frontmatter["created"] == "2023-02-30" and note.frontmatter["updated"] == "2023-02-28"
    assert note.tags == ["reise"] and note.aliases == ["Termin"]
    assert why in note.warnings  # `mindtui note datum` shows it
    assert resolved_targets(db_path, "gut.md") == ["datum.md"] and resolved_targets(db_path, "datum.md") == ["gut.md"]


@pytest.mark.parametrize("frontmatter, reason", [
    ("a: &a [*a]", "contains itself"),
    ("a: &a {b: *a}\nprivate: true", "contains itself"),
    ("x: " + "[" * 500 + "]" * 500, "nested deeper than 64 levels"),
    ("x: " + "1" * 5000, "is not a usable number"),
], ids=["list-in-itself", "mapping-in-itself", "500-levels", "5000-digits"])
def test_frontmatter_yaml_cannot_keep_is_a_warning_on_that_note(vault, db_path, frontmatter, reason):
    vault.write("gut.md", "Siehe [[seltsam]].\n")
    vault.write("seltsam.md", f"---\n{frontmatter}\n---\nDer Text bleibt, mit [[gut]].\n", dedent=False)
    report = run_import(db_path, vault.root)
    assert reason in reasons(report)["seltsam.md"]
    note = note_row(db_path, "seltsam.md")
    assert any(reason in w for w in note.warnings)
    assert resolved_targets(db_path, "seltsam.md") == ["gut.md"] and resolved_targets(db_path, "gut.md") == ["seltsam.md"]
    assert note.private == ("private: true" in frontmatter)  # read from the lines, as for malformed YAML


def test_a_note_the_parser_fails_on_keeps_its_last_good_version(vault, db_path, monkeypatch):
    """An error nobody foresaw (here: the parser raises) stops that file only: an indexed note
    keeps its rows, a new one is imported as plain text and flagged; the rest of the run imports."""
    vault.write("alt.md", "---\ntags: [erste]\n---\nErste Fassung mit [[gut]].\n")
    vault.write("gut.md", "Gut.\n")
    run_import(db_path, vault.root)
    before = note_row(db_path, "alt.md")
    vault.write("alt.md", "---\ntags: [zweite]\n---\nZweite Fassung.\n")
    vault.write("neu.md", "---\nprivate: true\ntags: [neu]\n---\nNeuer Text mit [[gut]].\n")
    vault.write("gut.md", "Gut, geändert.\n")
    real_parse = note_reader.parse_file

    def failing(path, *args):
        if path in ("alt.md", "neu.md"):
            raise RecursionError("maximum recursion depth exceeded")
        return real_parse(path, *args)

    monkeypatch.setattr(note_reader, "parse_file", failing)
    report = run_import(db_path, vault.root)
    why = reasons(report)
    assert why["alt.md"] == ("cannot be parsed (RecursionError: maximum recursion depth exceeded);"
                             " its last good version is kept")
    assert "imported as plain text" in why["neu.md"]
    kept = note_row(db_path, "alt.md")
    assert (kept.content_hash, kept.tags) == (before.content_hash, ["erste"])
    assert resolved_targets(db_path, "alt.md") == ["gut.md"]
    new = note_row(db_path, "neu.md")
    assert new.tags == [] and new.frontmatter == {} and new.private  # the flag is read from its lines
    assert any("cannot be parsed (RecursionError" in w for w in new.warnings)
    assert note_row(db_path, "gut.md").word_count == 2
    # Still failing after an edit: a note imported as plain text has no good version to keep.
    vault.write("neu.md", "---\nprivate: true\ntags: [neu]\n---\nNeuer Text, länger, mit [[gut]].\n")
    report = run_import(db_path, vault.root)
    assert "imported as plain text" in reasons(report)["neu.md"]
    assert "länger" in chunk_text(db_path, "neu.md")
    monkeypatch.undo()
    report = run_import(db_path, vault.root)  # the parser works again: both notes are read properly
    assert note_row(db_path, "alt.md").tags == ["zweite"] and note_row(db_path, "neu.md").tags == ["neu"]
    assert "alt.md" not in reasons(report) and "neu.md" not in reasons(report)


def test_a_note_whose_rows_cannot_be_built_keeps_its_last_good_version(vault, db_path, monkeypatch):
    vault.write("alt.md", "Erste Fassung.\n")
    run_import(db_path, vault.root)
    before = note_row(db_path, "alt.md").content_hash
    vault.write("alt.md", "Zweite Fassung.\n")
    vault.write("neu.md", "# Neu\n\nNeuer Text.\n")
    real_chunks = note_builder.chunk_note

    def failing(title, parsed, profile):
        if title == "alt" or parsed.headings:  # neu.md fails with its heading, not as plain text
            raise ValueError("chunker failed")
        return real_chunks(title, parsed, profile)

    monkeypatch.setattr(note_builder, "chunk_note", failing)
    report = run_import(db_path, vault.root)
    why = reasons(report)
    assert why["alt.md"] == "cannot be indexed (ValueError: chunker failed); its last good version is kept"
    assert note_row(db_path, "alt.md").content_hash == before
    new = note_row(db_path, "neu.md")
    assert why["neu.md"] == "cannot be indexed (ValueError: chunker failed); imported as plain text, without frontmatter"
    assert why["neu.md"] in new.warnings and new.word_count == 3


@pytest.mark.parametrize("odd", ["created: 2023-02-30", "a: &a [*a]"], ids=["date", "recursion"])
@pytest.mark.parametrize("in_answered_note", [False, True], ids=["new-note", "answered-note"])
def test_curate_resolve_answers_without_a_traceback_when_a_note_holds_odd_yaml(vault, db_path, capsys, odd,
                                                                              in_answered_note):
    """The answer's re-import reads the note it wrote and one with odd YAML that appeared since the
    last import (on main: a traceback after the answer was committed and the file written)."""
    alpha_head = f"---\n{odd}\n---\n" if in_answered_note else ""
    vault.write("Alpha.md", f"{alpha_head}# Alpha\n\nSiehe [[Fehlt]].\n", dedent=False)
    settings = settings_for(db_path, vault)
    index(settings, vault)
    vault.write("Neu.md", f"---\n{odd}\n---\nNeu, mit [[Alpha]].\n", dedent=False)
    code = main(["curate", "list", "--db", str(db_path), "--json"])
    cards = json.loads(capsys.readouterr().out)["cards"]
    card = next(c for c in cards if c["kind"] == "unresolved_link")
    assert code == 0 and card["payload"]["source_path"] == "Alpha.md"
    code = main(["curate", "resolve", str(card["item_id"]), "retarget", "--target", "Alpha", "--db", str(db_path),
                 "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["status"] == "resolved" and json.loads(out)["notices"] == [] and "Traceback" not in err
    assert (vault.root / "Alpha.md").read_text(encoding="utf-8") == f"{alpha_head}# Alpha\n\nSiehe [[Alpha]].\n"
    assert resolved_targets(db_path, "Alpha.md") == ["Alpha.md"] and resolved_targets(db_path, "Neu.md") == ["Alpha.md"]
    assert note_row(db_path, "Neu.md").warnings and bool(note_row(db_path, "Alpha.md").warnings) == in_answered_note


def test_the_nightly_graph_step_reads_a_work_log_with_odd_yaml(vault, db_path):
    """On main both steps failed: 'ValueError: day is out of range for month', naming no file."""
    vault.write("Alpha.md", "# Alpha\n")
    vault.write("Beta.md", "# Beta\n")
    vault.write("Journal/Arbeitslog.md", "---\ncreated: 2023-02-30\nrefs: &r [*r]\n---\n# Arbeitslog\n\n"
                "| Datum | Sitzung | Notizen |\n|---|---|---|\n| 2026-10-01 | S1 | [[Alpha]], [[Beta]] |\n", dedent=False)
    index(settings_for(db_path, vault), vault, steps=("import", "graph"))  # asserts that every step succeeded
    conn = open_database(db_path, migrate=False)
    try:
        pairs = conn.execute("SELECT count(*) FROM edges WHERE signal = 'change'").fetchone()[0]
    finally:
        conn.close()
    assert pairs >= 1
