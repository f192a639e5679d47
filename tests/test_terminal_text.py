"""What a vault's names and texts may hold never acts on the terminal the CLI prints to: control
characters (an ESC starting a terminal sequence, a carriage return, a NUL) are shown as escapes
for people, kept as they are in --json and in the store; a frontmatter title is one line. Names a
note must not be created under, paths that are no folder, files that are no files."""

from __future__ import annotations

import json
import os
import re

import pytest

from mindtui.cli import main
from mindtui.errors import OperationFailed
from mindtui.service import Audience, Service
from mindtui.service.printable import printable, printable_line

from conftest import run_import
from curation_support import nightly, settings_for

ESC = "\x1b"


def test_printable_escapes_every_control_character_but_line_breaks_and_tabs():
    assert printable("a\x1b[31mb\x00c\x07d\x9be\x7ff") == "a\\x1b[31mb\\x00c\\x07d\\x9be\\x7ff"
    assert printable("eins\nzwei\r\ndrei\tvier\rfünf") == "eins\nzwei\r\ndrei\tvier\\rfünf"
    assert printable("Übung ä ß “quote” 😀") == "Übung ä ß “quote” 😀"
    assert printable_line("eins\nzwei\t\x1b") == "eins\\nzwei\\t\\x1b"
    # bidirectional overrides and isolates reorder what follows on screen; marks and joiners stay
    assert printable("Rechnung\u202efdp.exe \u2066x\u2069") == "Rechnung\\u202efdp.exe \\u2066x\\u2069"
    # the line and paragraph separators break a line on screen (and for str.splitlines())
    assert printable("ls\u2028rm \u2029") == "ls\\u2028rm \\u2029" and printable_line("a\u2028") == "a\\u2028"
    assert printable("\u05e9\u05dc\u05d5\u05dd\u200f 👩\u200d💻") == "\u05e9\u05dc\u05d5\u05dd\u200f 👩\u200d💻"


def test_a_name_that_reverses_itself_on_screen_is_printed_as_stored(vault, db_path, capsys):
    vault.write("Rechnung\u202efdp.exe.md", "Eine Rechnung.\n")
    assert main(["index", str(vault.root), "--db", str(db_path)]) == 0
    capsys.readouterr()
    assert main(["search", "Rechnung", "--db", str(db_path), "--mode", "fts"]) == 0
    out = capsys.readouterr().out
    assert "\u202e" not in out and "(Rechnung\\u202efdp.exe.md)" in out


@pytest.fixture
def hostile_vault(vault):
    vault.write("Steuer.md", "---\ntitle: \"Zeile eins\\nZeile zwei\\u001b[31mROT\\u0000\"\n---\n"
                "Kontrolle \x1b]0;gekapert\x07 und \x1b]52;c;Z2VrYXBlcnQ=\x07 im Text.\n", dedent=False)
    vault.write(f"Name{ESC}[2J.md", "Kontrolle im Namen.\n", dedent=False)
    vault.write_bytes(f"Binär{ESC}[5m.md", b"\x00\x01\x02binary")  # skipped: a warning names it
    return vault


def test_the_cli_prints_no_control_character_of_the_vault(hostile_vault, db_path, capsys):
    assert main(["index", str(hostile_vault.root), "--db", str(db_path)]) == 0
    captured = capsys.readouterr()
    assert ESC not in captured.err and "Binär\\x1b[5m.md" in captured.err  # the warning shows the name
    assert main(["search", "Kontrolle", "--db", str(db_path), "--mode", "fts"]) == 0
    out = capsys.readouterr().out
    assert ESC not in out and "\x07" not in out and "\x00" not in out
    assert "Zeile eins Zeile zwei\\x1b[31mROT\\x00  (Steuer.md)" in out  # one line, as stored
    assert "\\x1b]52;c;Z2VrYXBlcnQ=\\x07" in out and f"(Name\\x1b[2J.md)" in out
    assert main(["note", "Steuer.md", "--db", str(db_path)]) == 0
    out = capsys.readouterr().out
    assert ESC not in out and "Kontrolle \\x1b]0;gekapert\\x07 und" in out
    # --json keeps every character (JSON escapes them), and so does the store
    assert main(["search", "Kontrolle", "--db", str(db_path), "--mode", "fts", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)["results"]
    assert {r["path"] for r in found} == {"Steuer.md", f"Name{ESC}[2J.md"}
    assert {r["title"] for r in found} == {f"Zeile eins Zeile zwei{ESC}[31mROT\x00", f"Name{ESC}[2J"}


def test_a_frontmatter_title_is_one_line(vault, db_path):
    vault.write("Block.md", "---\ntitle: |\n  Erste Zeile\n  zweite Zeile\n\n  dritte\n---\nText.\n", dedent=False)
    run_import(db_path, vault.root)
    with Service(settings_for(db_path, vault), audience=Audience.OWNER) as service:
        assert service.note("Block.md").title == "Erste Zeile zweite Zeile dritte"


def test_index_of_a_folder_that_is_not_there_makes_no_database(tmp_path, capsys):
    db = tmp_path / "neu.db"
    assert main(["index", str(tmp_path / "Tippfehler"), "--db", str(db)]) == 2
    assert "Tippfehler does not exist or is not a folder" in capsys.readouterr().err
    assert not any(p.name.startswith("neu.db") for p in tmp_path.iterdir())


def test_a_note_name_that_is_a_fifo_is_a_warning_and_never_read(vault, db_path):
    vault.write("Gut.md", "Gut.\n")
    os.mkfifo(vault.root / "Rohr.md")  # opening it to read would wait for a writer forever
    os.mkfifo(vault.root / "rohr.fifo")
    os.symlink("rohr.fifo", vault.root / "Verweis.md")
    report = run_import(db_path, vault.root)
    why = {w.path: w.reason for w in report.warnings}
    assert why == {"Rohr.md": "a FIFO, not a file: skipped", "Verweis.md": "a FIFO, not a file: skipped"}
    assert report.notes_total == 1


def test_no_note_is_created_under_a_name_obsidian_or_windows_refuses(vault, db_path):
    vault.write("Quelle.md", "[[Frage: warum?]] [[CON]] [[Ordner./Neu]] [[Gut. Punkt.]] [[../../draussen]]\n",
                dedent=False)
    settings = settings_for(db_path, vault, curation={"note_template": None})
    nightly(settings, vault)
    with Service(settings, audience=Audience.OWNER) as service:
        cards = {c.payload["target"]: c for c in service.curation_list("unresolved_link")}
        refusals = {"Frage: warum?": "holds : ?, which Obsidian and Windows do not allow",
                    "CON": "is a device name on Windows", "Ordner./Neu": "ends in a dot or a space",
                    "../../draussen": "it climbs out of the vault ('..')"}
        for target, why in refusals.items():
            with pytest.raises(OperationFailed, match=re.escape(why) + ".*nothing was written"):
                service.curation_resolve(cards[target].item_id, "create")
        service.curation_resolve(cards["Gut. Punkt."].item_id, "create")  # a dot before `.md` is fine
    assert sorted(p.name for p in vault.root.iterdir()) == ["Gut. Punkt..md", "Quelle.md"]
