"""What a real vault's file system and frontmatter hold beyond the nasty corpus: names that are
not UTF-8, aliases that expand exponentially. Each is a warning naming the file; every other note
imports and a second run changes nothing."""

from __future__ import annotations

import json
import os

from mindtui.cli import main
from mindtui.store import open_database

from conftest import dump_database, run_import


def paths(db_path) -> set[str]:
    conn = open_database(db_path, migrate=False)
    try:
        return {path for (path,) in conn.execute("SELECT path FROM notes")}
    finally:
        conn.close()


def _write_raw(folder, name: bytes, data: bytes) -> None:
    with open(os.fsencode(folder) + b"/" + name, "wb") as handle:
        handle.write(data)


def test_a_name_that_is_not_utf8_is_a_warning_and_the_rest_imports(vault, db_path, capsys):
    vault.write("gut.md", "Gut, mit [[Café]].\n")
    _write_raw(vault.root, b"Caf\xe9.md", b"Ein Name in Latin-1.\n")  # as an old Windows copy writes it
    os.mkdir(os.fsencode(vault.root) + b"/Ordner\xff")
    _write_raw(os.fsencode(vault.root) + b"/Ordner\xff", b"drin.md", b"Im Ordner.\n")
    report = run_import(db_path, vault.root)
    why = {w.path: w.reason for w in report.warnings}
    assert "not valid UTF-8" in why["Caf\\xe9.md"] and "not valid UTF-8" in why["Ordner\\xff"]
    assert paths(db_path) == {"gut.md"}
    before = dump_database(db_path)
    # The CLI's report (stdout JSON, the job's stored report) carries the name readably.
    assert main(["--db", str(db_path), "--json", "-q", "index", str(vault.root)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {w["path"] for w in out["warnings"]} >= {"Caf\\xe9.md", "Ordner\\xff"}
    assert dump_database(db_path) == before
