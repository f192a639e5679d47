"""What a real vault's file system and frontmatter hold beyond the nasty corpus: names that are
not UTF-8, aliases that expand exponentially. Each is a warning naming the file; every other note
imports and a second run changes nothing."""

from __future__ import annotations

import json
import os

import pytest

from mindtui.cli import main
from mindtui.config import load_settings
from mindtui.errors import OperationFailed
from mindtui.service import Audience, SearchOptions, Service
from mindtui.store import names, open_database
from mindtui.vault import importer

from conftest import dump_database, query_rows, run_import
from curation_support import nightly, settings_for



def paths(db_path) -> set[str]:
    return {path for (path,) in query_rows(db_path, "SELECT path FROM notes")}


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


def laughs(levels: int) -> str:
    """Frontmatter whose aliases stand for 9**levels strings in `levels` short lines."""
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines)


def test_aliases_that_expand_exponentially_are_ignored_and_the_note_stays_private(vault, db_path):
    # 9**6 strings here (a second's work to build); 9**9, the "billion laughs", took 8 GB and
    # eight minutes, then failed the whole import writing a frontmatter of more than a GB.
    vault.write("Lachen.md", f"---\nprivate: true\n{laughs(6)}\n---\nText bleibt.\n")
    vault.write("Basis.md", "---\nbasis: &basis {tags: [geerbt], typ: x}\n<<: *basis\ntitle: Erbe\n---\nMerge.\n")
    vault.write("gut.md", "Gut.\n")
    report = run_import(db_path, vault.root)
    why = {w.path: w.reason for w in report.warnings}
    assert "YAML aliases expand it to more than twice its own text" in why["Lachen.md"]
    (private, frontmatter), = query_rows(db_path, "SELECT private, frontmatter FROM notes WHERE path = 'Lachen.md'")
    assert private == 1 and frontmatter == "{}"
    (tags, title), = query_rows(db_path, "SELECT tags, title FROM notes WHERE path = 'Basis.md'")
    assert (json.loads(tags), title) == (["geerbt"], "Erbe")  # a merge key copies a mapping: kept
    assert "Basis.md" not in why and paths(db_path) == {"Lachen.md", "Basis.md", "gut.md"}
    before = dump_database(db_path)
    run_import(db_path, vault.root)
    assert dump_database(db_path) == before


@pytest.mark.parametrize("command", [["search", "Caf\udce9"], ["note", "Caf\udce9"], ["index", "/tmp/Caf\udce9"]])
def test_an_argument_that_is_not_utf8_is_a_usage_error_naming_it(sample_vault, db_path, capsys, command):
    # What a Latin-1 terminal sends for "Café": Python hands the byte over as a lone surrogate,
    # which the database cannot bind (a traceback before).
    run_import(db_path, sample_vault.root)
    before = dump_database(db_path)
    with pytest.raises(SystemExit) as exit_info:
        main(["--db", str(db_path), *command])
    assert exit_info.value.code == 2
    assert "argument" in (err := capsys.readouterr().err) and "Caf\\xe9' is not valid UTF-8" in err
    assert dump_database(db_path) == before


NFC, NFD = "\u00dcbung", "U\u0308bung"  # 'Übung' composed (as typed) and decomposed (as a Mac names files)


def test_a_name_links_and_is_found_in_either_unicode_normalisation(vault, db_path):
    vault.write(f"{NFD}.md", "Vom Mac.\n")
    vault.write("Caf\u00e9.md", "Hier.\n")
    vault.write("Bilder/Gr\u00fc\u00dfe.png", "kein markdown")
    vault.write("quelle.md", f"[[{NFC}]] [[Cafe\u0301]] [[{NFC}#Kopf]] ![[Gru\u0308\u00dfe.png]]\n")
    run_import(db_path, vault.root)
    links = query_rows(db_path, "SELECT l.resolution, t.path FROM note_links l LEFT JOIN notes t"
                           " ON t.note_id = l.resolved_note_id ORDER BY l.seq")
    assert links == [("resolved", f"{NFD}.md"), ("resolved", "Caf\u00e9.md"), ("resolved", f"{NFD}.md"),
                     ("attachment", None)]
    conn = open_database(db_path, migrate=False)
    try:
        assert [n.path for n in names.notes_named(conn, NFC)[1]] == [f"{NFD}.md"]
        assert [n.path for n in names.notes_named(conn, "cafe\u0301")[1]] == ["Caf\u00e9.md"]
    finally:
        conn.close()
    vault.write(f"{NFC}.md", "Zweite Schreibweise.\n")  # both spellings: one name, two notes
    run_import(db_path, vault.root)
    (resolution,), = query_rows(db_path, "SELECT resolution FROM note_links WHERE seq = 0")
    assert resolution == "ambiguous"


def test_tags_and_aliases_are_the_scalars_written_never_a_python_repr(vault, db_path):
    vault.write("Zahlen.md", "---\ntags: 2024\naliases: [1, null, true, 2.5]\n---\nText.\n")
    vault.write("Verschachtelt.md", "---\ntags: [[a, B], {c: d}, e]\naliases: {x: y}\n---\nText.\n")
    vault.write("Komma.md", "---\ntags: x, y\naliases: ['a, b']\n---\nText.\n")
    run_import(db_path, vault.root)
    found = {path: (json.loads(tags), json.loads(aliases))
             for path, tags, aliases in query_rows(db_path, "SELECT path, tags, aliases FROM notes")}
    assert found == {"Zahlen.md": (["2024"], ["1", "true", "2.5"]),
                     "Verschachtelt.md": (["a", "b", "e"], []),
                     "Komma.md": (["x", "y"], ["a, b"])}


def test_links_that_point_to_each_other_are_a_loop_not_a_missing_target(vault, db_path):
    vault.write("gut.md", "Gut.\n")
    os.symlink("zwei.md", vault.root / "eins.md")
    os.symlink("eins.md", vault.root / "zwei.md")
    os.symlink("selbst.md", vault.root / "selbst.md")
    why = {w.path: w.reason for w in run_import(db_path, vault.root).warnings}
    for link in ("eins.md", "zwei.md", "selbst.md"):
        assert why[link].startswith("symlink loop"), why[link]  # was "broken symlink (target ... is missing)"
    assert paths(db_path) == {"gut.md"}


def test_a_private_folder_named_decomposed_is_private_under_a_composed_pattern(vault, db_path, monkeypatch):
    # A Mac names the folder 'Ärzte' decomposed; private_paths is typed composed (and the other way).
    vault.write("A\u0308rzte/Befund.md", "Befund Quittenbaum.\n")
    vault.write("\u00d6ffentlich/Geheim.md", "Quittenbaum, auch geheim.\n")
    vault.write("Offen.md", "Quittenbaum, offen.\n")
    monkeypatch.setenv("MINDTUI_PRIVACY__PRIVATE_PATHS", "[\u00c4rzte, O\u0308ffentlich/**]")
    monkeypatch.setenv("MINDTUI_IMPORT__EXCLUDE", "[\u00c4rzte/Entwurf.md]")
    vault.write("A\u0308rzte/Entwurf.md", "Nicht indexieren.\n")
    run_import(db_path, vault.root)
    assert dict(query_rows(db_path, "SELECT path, private FROM notes")) == {
        "A\u0308rzte/Befund.md": 1, "\u00d6ffentlich/Geheim.md": 1, "Offen.md": 0}
    settings = load_settings().with_values({"db": str(db_path)})
    with Service(settings, audience=Audience.AGENT) as agent:
        response = agent.search("Quittenbaum", SearchOptions(mode="fts", log=False))
    assert [r.path for r in response.results] == ["Offen.md"]


def test_a_retriever_weight_out_of_range_is_a_warning_and_the_types_weight(vault, db_path):
    # YAML 1.1 reads 1e308 as text, which float() takes: the note's score became infinite.
    written = (("Riesig", "1e308"), ("Million", "1000000"), ("Negativ", "-5"), ("Null", "0"), ("Hoch", "2.5"))
    for name, weight in written:
        vault.write(f"{name}.md", f"---\nretriever_weight: {weight}\n---\nText.\n")
    why = {w.path: w.reason for w in run_import(db_path, vault.root).warnings}
    weights = dict(query_rows(db_path, "SELECT path, retriever_weight FROM notes"))
    assert weights == {"Riesig.md": 1.0, "Million.md": 1.0, "Negativ.md": 1.0, "Null.md": 0.0, "Hoch.md": 2.5}
    for path in ("Riesig.md", "Million.md", "Negativ.md"):
        assert "is outside 0 to 10; using 1.0" in why[path]
    assert "Null.md" not in why and "Hoch.md" not in why


def test_creating_a_note_for_a_link_no_file_can_be_named_after_says_why(vault, db_path):
    # A link names anything: 300 letters (a file name holds 255 bytes) or a control character.
    vault.write("Quelle.md", "[[" + "a" * 300 + "]] [[Steuer\x01zeichen]] [[Gut]]\n", dedent=False)
    settings = settings_for(db_path, vault, curation={"note_template": None})
    nightly(settings, vault)
    with Service(settings, audience=Audience.OWNER) as service:
        cards = {c.payload["target"]: c for c in service.curation_list("unresolved_link")}
        with pytest.raises(OperationFailed, match="is longer than 255 bytes; nothing was written"):
            service.curation_resolve(cards["a" * 300].item_id, "create")
        with pytest.raises(OperationFailed, match="holds a control character; nothing was written"):
            service.curation_resolve(cards["Steuer\x01zeichen"].item_id, "create")
        service.curation_resolve(cards["Gut"].item_id, "create")
    assert sorted(p.name for p in vault.root.iterdir()) == ["Gut.md", "Quelle.md"]


def test_a_file_that_grows_past_the_size_limit_while_the_import_runs_is_not_read_whole(vault, db_path, monkeypatch):
    vault.write("Log.md", "Ein kleines Protokoll.\n")
    vault.write("gut.md", "Gut.\n")
    run_import(db_path, vault.root)
    before = query_rows(db_path, "SELECT path, content_hash FROM notes ORDER BY path")
    listed = importer.scan_vault

    def listed_then_grown(*args, **kwargs):  # a program appends to the log once it is listed
        scan = listed(*args, **kwargs)
        with open(vault.root / "Log.md", "ab") as handle:
            handle.write(b"Zeile\n" * 2_000)
        return scan

    monkeypatch.setattr(importer, "scan_vault", listed_then_grown)
    vault.write("Log.md", "Ein kleines Protokoll, eine Zeile mehr.\n")  # listed as changed, then grown
    report = run_import(db_path, vault.root, max_file_bytes=10_000)
    why = {w.path: w.reason for w in report.warnings}
    assert "grew past import.max_file_bytes (10,000) while the import ran" in why["Log.md"]
    assert query_rows(db_path, "SELECT path, content_hash FROM notes ORDER BY path") == before  # kept as it was
