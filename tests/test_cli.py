"""The command line: help, JSON on stdout, diagnostics on stderr, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mindtui.cli import build_parser, main
from mindtui.store import open_database

REPORT_KEYS = {
    "notes_total", "notes_added", "notes_changed", "notes_deleted", "notes_unchanged", "chunks_total",
    "explicit_total", "inline_total", "callout_total", "defaults_total", "structure_total",
    "unresolved_total", "out_of_corpus_total", "warnings",
}


def test_help_lists_commands_and_exit_codes(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    out = capsys.readouterr().out
    assert exit_info.value.code == 0
    for word in ("index", "status", "--job", "--db", "--json", "exit codes", "another job is running"):
        assert word in out


COMMON = ("--db", "--json", "--quiet")
READING = COMMON + ("--audience",)


@pytest.mark.parametrize("command, words", [
    ("index", COMMON + ("VAULT", "--allow-mass-delete")),
    ("status", READING),
    ("embed", COMMON),
    ("models", COMMON + ("{build,status}",)),
    ("search", READING + ("QUERY", "--limit", "--mode", "{hybrid,fts,vector}", "--type", "--tag", "--path",
                          "--explain", "--no-log")),
    ("note", READING + ("NOTE", "--chunks")),
    ("eval", COMMON + ("{beir,golden,links,repeat,usage}", "SOURCE", "REPEAT", "--vault", "--systems", "--max-queries", "--sample",
                       "--split", "--scratch", "--scratch-db", "--set")),
    ("neighbors", READING + ("NOTE", "--signal", "--limit")),
    ("neighbours", READING + ("NOTE", "--signal", "--limit")),
    ("graph", READING + ("{stats,refresh}", "--vault")),
])
def test_each_command_has_help(command, words, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    out = capsys.readouterr().out
    name = "neighbors" if command == "neighbours" else command  # the alias shows the command's own help
    assert exit_info.value.code == 0 and out.startswith(f"usage: mindtui {name} ")
    missing = [w for w in words if w not in out]
    assert not missing, f"`mindtui {command} --help` lacks {missing}"


def test_command_options_parse_into_what_the_commands_read():
    parse = build_parser().parse_args
    args = parse(["search", "q", "--limit", "3", "--mode", "fts", "--type", "book", "--tag", "t", "--path", "P/",
                  "--explain", "--no-log", "--audience", "agent", "--db", "x.db", "--json"])
    assert (args.query, args.limit, args.mode, args.note_type, args.tag, args.path) == ("q", 3, "fts", "book", "t", "P/")
    assert args.explain and args.no_log and args.audience == "agent" and str(args.db) == "x.db" and args.json
    defaults = parse(["search", "q"])
    assert (defaults.limit, defaults.mode, defaults.explain, defaults.no_log, defaults.audience) == (
        10, "hybrid", False, False, "owner")
    args = parse(["neighbors", "N", "--signal", "change", "--signal", "search", "--limit", "5"])
    assert (args.note, args.signal, args.limit) == ("N", ["change", "search"], 5)
    args = parse(["eval", "golden", "g.json", "--vault", "V", "--systems", "fts,hybrid", "--scratch-db", "s.db",
                  "--set", "search.rrf_k=30", "--set", "search.fusion=rrf"])
    assert (args.kind, str(args.source), str(args.eval_vault), args.systems, str(args.scratch_db)) == (
        "golden", "g.json", "V", "fts,hybrid", "s.db")
    assert args.overrides == ["search.rrf_k=30", "search.fusion=rrf"]
    assert parse(["index", "V", "--allow-mass-delete"]).allow_mass_delete is True
    assert parse(["index", "V"]).allow_mass_delete is False
    assert parse(["note", "N", "--chunks"]).chunks is True and parse(["models", "build"]).action == "build"
    for bad in (["search", "q", "--mode", "magic"], ["models", "fetch"], ["eval", "msmarco", "x"],
                ["search", "q", "--audience", "everyone"]):
        with pytest.raises(SystemExit) as exit_info:
            parse(bad)
        assert exit_info.value.code == 2, bad


def test_usage_error_is_exit_2(capsys):
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["index"])
    assert exit_info.value.code == 2


def test_when_told_without_a_job_is_a_usage_error(capsys, db_path):
    with pytest.raises(SystemExit) as exit_info:
        main(["--db", str(db_path), "--when-told", "status"])
    assert exit_info.value.code == 2
    assert "--when-told needs --job" in capsys.readouterr().err


def test_tui_with_json_is_a_usage_error_not_a_full_screen_app(capsys, db_path):
    with pytest.raises(SystemExit) as exit_info:
        main(["tui", "--db", str(db_path), "--json"])
    assert exit_info.value.code == 2
    assert "mindtui status --json" in capsys.readouterr().err


def test_index_json_report(sample_vault, db_path):
    sample_vault.write_bytes("Leer.md", b"")  # the sample vault imports cleanly: one warning to report
    done = subprocess.run([sys.executable, "-m", "mindtui", "index", str(sample_vault.root), "--db", str(db_path),
                           "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)  # stdout is only the JSON document
    assert REPORT_KEYS <= set(report)
    assert report["notes_added"] == report["notes_total"] > 40
    assert report["warnings"] == [{"path": "Leer.md", "reason": "empty file"}]
    conn = open_database(db_path)
    (stored,) = conn.execute("SELECT report FROM job_runs WHERE job = 'index'").fetchone()
    conn.close()
    assert json.loads(stored)["notes_total"] == report["notes_total"]


def test_index_human_output_and_progress_on_stderr(sample_vault, db_path):
    done = subprocess.run([sys.executable, "-m", "mindtui", "index", str(sample_vault.root), "--db", str(db_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0
    assert "notes_total" in done.stdout and "import:" not in done.stdout
    assert "import:" in done.stderr  # progress lines


def test_status_on_missing_database_is_exit_4(tmp_path, capsys):
    assert main(["status", "--db", str(tmp_path / "nope.db")]) == 4
    assert "no such database" in capsys.readouterr().err


def test_newer_database_is_exit_4(db_path, sample_vault, capsys):
    conn = open_database(db_path)
    conn.execute("PRAGMA user_version = 999")
    conn.close()
    assert main(["index", str(sample_vault.root), "--db", str(db_path), "--quiet"]) == 4
    assert "newer than this mindtui" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["search", "x", "--limit", "0"], ["search", "x", "--limit", "-5"],
                                  ["neighbors", "x", "--limit", "0"], ["search", "x", "--limit", "many"]])
def test_a_limit_below_one_is_a_usage_error(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(argv)
    assert exit_info.value.code == 2 and "--limit" in capsys.readouterr().err


def test_note_text_shows_its_facts_and_warnings(vault, db_path, capsys):
    vault.write("Kaputt.md", "---\ntags: [a, b\n---\nZitronenbaum.\n", dedent=False)
    vault.write("Gut.md", "---\ntags: [garten]\naliases: [Beet]\nprivate: true\n---\nEin Beet.\n", dedent=False)
    assert main(["index", str(vault.root), "--db", str(db_path), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["note", "Kaputt.md", "--db", str(db_path)]) == 0
    assert "warning: malformed YAML frontmatter" in capsys.readouterr().out
    assert main(["note", "Gut.md", "--db", str(db_path)]) == 0
    out = capsys.readouterr().out
    assert "aliases: Beet" in out and "tags: garten" in out and "flags: private, models may read it" in out


def test_status_json(sample_vault, db_path, capsys):
    assert main(["index", str(sample_vault.root), "--db", str(db_path), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["status", "--db", str(db_path), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["notes_total"] > 40 and status["recent_runs"][0]["status"] == "ok"


def test_search_json_shape_and_notices(sample_vault, db_path, real_model, capsys):
    assert main(["index", str(sample_vault.root), "--db", str(db_path), "-q"]) == 0
    capsys.readouterr()
    assert main(["search", "Zettelkasten Luhmann", "--db", str(db_path), "--json", "--limit", "3", "--no-log"]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert set(data) == {"mode", "notices", "results", "search_id"} and data["mode"] == "hybrid"
    assert any("no vectors yet" in n for n in data["notices"]) and "no vectors yet" in captured.err
    assert len(data["results"]) == 3
    first = data["results"][0]
    assert set(first) == {"note_id", "path", "title", "score", "snippet", "chunk_id", "explain", "note_type",
                          "highlights", "kind", "item_id"}
    assert first["kind"] == "note" and first["item_id"] is None
    assert first["note_type"] and first["highlights"]
    for start, end in first["highlights"]:  # each span marks a query word's form in the snippet
        assert first["snippet"][start:end].lower().startswith(("zettel", "luhmann"))
    assert "fts" in first["explain"] and first["snippet"]
    assert main(["search", "\"NEAR(", "--db", str(db_path), "--mode", "fts", "--no-log"]) == 0  # FTS syntax is text
    assert main(["search", "x", "--db", str(db_path.parent / "absent.db")]) == 4


@pytest.mark.parametrize("closed", ["2>&-", "2>&- <&-"])
def test_a_closed_stderr_or_stdin_fails_nothing_and_stdout_keeps_the_results(sample_vault, db_path, closed):
    """`mindtui index V 2>&-` (a cron line, a unit file): the progress line went to a stderr that
    Python had set to None, the import failed, and its failure was printed on stdout."""
    command = [sys.executable, "-m", "mindtui", "index", str(sample_vault.root), "--db", str(db_path), "--json"]
    process = subprocess.run(["sh", "-c", f'exec "$@" {closed}', "sh", *command], capture_output=True, text=True,
                             timeout=300)
    assert process.returncode == 0, process.stdout
    assert json.loads(process.stdout)["notes_added"] > 40  # the report alone
    searched = subprocess.run(["sh", "-c", f'exec "$@" {closed}', "sh", sys.executable, "-m", "mindtui", "search",
                               "SQLite", "--db", str(db_path), "--json"], capture_output=True, text=True, timeout=300)
    assert searched.returncode == 0 and json.loads(searched.stdout)["results"]
