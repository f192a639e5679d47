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


@pytest.mark.parametrize("command", ["index", "status", "embed", "models", "search", "eval", "neighbors", "graph"])
def test_each_command_has_help(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    assert "--db" in capsys.readouterr().out


def test_usage_error_is_exit_2(capsys):
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["index"])
    assert exit_info.value.code == 2


def test_index_json_report(sample_vault, db_path):
    done = subprocess.run([sys.executable, "-m", "mindtui", "index", str(sample_vault.root), "--db", str(db_path),
                           "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)  # stdout is only the JSON document
    assert REPORT_KEYS <= set(report)
    assert report["notes_added"] == report["notes_total"] > 40
    assert all(set(w) == {"path", "reason"} for w in report["warnings"])
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
    assert set(data) == {"mode", "notices", "results"} and data["mode"] == "hybrid"
    assert any("no vectors yet" in n for n in data["notices"]) and "no vectors yet" in captured.err
    assert len(data["results"]) == 3
    first = data["results"][0]
    assert set(first) == {"note_id", "path", "title", "score", "snippet", "chunk_id", "explain"}
    assert "fts" in first["explain"] and first["snippet"]
    assert main(["search", "\"NEAR(", "--db", str(db_path), "--mode", "fts", "--no-log"]) == 0  # FTS syntax is text
    assert main(["search", "x", "--db", str(db_path.parent / "absent.db")]) == 4
