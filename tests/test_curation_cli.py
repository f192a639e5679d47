"""`mindtui curate list|show|resolve|undo|refresh`: help, JSON on stdout, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from curation_support import nightly, settings_for, write_vault
from mindtui.cli import build_parser, main

COMMON = ("--db", "--json", "--quiet")


@pytest.mark.parametrize("argv, words", [
    (["curate"], COMMON + ("list", "show", "resolve", "undo", "refresh", "ACTION")),
    (["curate", "list"], COMMON + ("--kind", "--status", "--limit", "unresolved_link", "mass_edit",
                                   "{open,resolved,dismissed,snoozed,all}")),
    (["curate", "show"], COMMON + ("ID",)),
    (["curate", "resolve"], COMMON + ("ID", "ACTION", "--target", "--days", "create|retarget|dismiss",
                                      "accept|reject|snooze", "include|keep_out")),
    (["curate", "undo"], COMMON),
    (["curate", "refresh"], COMMON),
])
def test_curate_commands_have_help(argv, words, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--help"])
    out = capsys.readouterr().out
    assert exit_info.value.code == 0 and out.startswith(f"usage: mindtui {' '.join(argv)} ")
    missing = [w for w in words if w not in out]
    assert not missing, f"`mindtui {' '.join(argv)} --help` lacks {missing}"


def test_curate_options_parse():
    parse = build_parser().parse_args
    args = parse(["curate", "resolve", "7", "retarget", "--target", "Gamma", "--json", "--db", "x.db"])
    assert (args.command, args.curate_command, args.item_id, args.action, args.target, args.days, args.json) == (
        "curate", "resolve", 7, "retarget", "Gamma", None, True)
    args = parse(["curate", "list", "--kind", "mass_edit", "--status", "all", "--limit", "3"])
    assert (args.kind, args.status, args.limit) == ("mass_edit", "all", 3)
    assert parse(["curate", "list"]).status == "open"
    for bad in (["curate"], ["curate", "list", "--kind", "typo"], ["curate", "show", "x"],
                ["curate", "resolve", "1"], ["curate", "list", "--status", "closed"]):
        with pytest.raises(SystemExit) as exit_info:
            parse(bad)
        assert exit_info.value.code == 2


@pytest.fixture
def indexed(vault, db_path, monkeypatch):
    write_vault(vault)
    settings = settings_for(db_path, vault)
    nightly(settings, vault)
    # The CLI reads the same settings (a mass edit is more than 2 notes) from the environment.
    monkeypatch.setenv("MINDTUI_GRAPH__MAX_NOTES_PER_SESSION", "2")
    return db_path


def run(capsys, *argv) -> tuple[int, dict | str, str]:
    code = main([*argv])
    captured = capsys.readouterr()
    out = json.loads(captured.out) if "--json" in argv and captured.out.strip() else captured.out
    return code, out, captured.err


def test_list_show_resolve_undo_as_json(indexed, vault, capsys):
    db = str(indexed)
    code, listed, _ = run(capsys, "curate", "list", "--db", db, "--json")
    assert code == 0 and listed["counts"] == {"unresolved_link": 2, "alias_link": 0, "ambiguous_link": 1, "link_suggestion": 1,
                                              "mass_edit": 1, "unresolved_entity": 0, "duplicate": 0,
                                              "contradiction": 0, "missing_quote": 0, "gap_question": 0, "stale": 0}
    importances = [c["importance"] for c in listed["cards"]]
    assert len(importances) == 5 and importances == sorted(importances, reverse=True)
    ambiguous = next(c for c in listed["cards"] if c["kind"] == "ambiguous_link")
    code, shown, _ = run(capsys, "curate", "show", str(ambiguous["item_id"]), "--db", db, "--json")
    assert code == 0 and [a["name"] for a in shown["actions"]] == ["pick", "dismiss"]
    assert shown["actions"][0]["args"][0]["name"] == "target"
    code, outcome, _ = run(capsys, "curate", "resolve", str(ambiguous["item_id"]), "pick", "--target",
                           "A/Doppelt.md", "--db", db, "--json")
    assert code == 0 and outcome == {"item_id": ambiguous["item_id"], "action": "pick", "status": "resolved",
                                     "message": "the link now names A/Doppelt", "changed_files": ["Alpha.md"],
                                     "notices": [], "undone": False}
    assert "Auch [[A/Doppelt|Doppelt]] und [[A/Doppelt|zwei]]." in (vault.root / "Alpha.md").read_text()
    # Undo from another process: the undo log is in the database.
    done = subprocess.run([sys.executable, "-m", "mindtui", "curate", "undo", "--db", db, "--json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["undone"] is True and "[[Doppelt]]" in (vault.root / "Alpha.md").read_text()
    code, human, _ = run(capsys, "curate", "list", "--db", db, "--kind", "ambiguous_link")
    assert code == 0 and human.splitlines()[0].split()[:3] == [str(ambiguous["item_id"]), "ambiguous_link", "0.60"]
    assert human.rstrip().endswith("open: unresolved_link 2 · alias_link 0 · ambiguous_link 1 · link_suggestion 1"
                                   " · mass_edit 1 · unresolved_entity 0 · duplicate 0 · contradiction 0"
                                   " · missing_quote 0 · gap_question 0 · stale 0")


def test_exit_codes_for_unknown_cards_bad_actions_and_changed_notes(indexed, vault, capsys):
    db = str(indexed)
    for argv in (("show", "999"), ("resolve", "999", "dismiss")):  # no such card: 1, as no such note
        code, _, err = run(capsys, "curate", *argv, "--db", db)
        assert code == 1 and "no curation card 999" in err
    _, listed, _ = run(capsys, "curate", "list", "--db", db, "--json", "--kind", "unresolved_link")
    card = listed["cards"][0]["item_id"]
    ambiguous = run(capsys, "curate", "list", "--db", db, "--json", "--kind", "ambiguous_link")[1]["cards"][0]
    assert run(capsys, "curate", "resolve", str(ambiguous["item_id"]), "dismiss", "--db", db)[0] == 0
    code, _, err = run(capsys, "curate", "resolve", str(ambiguous["item_id"]), "dismiss", "--db", db)
    assert code == 1 and "is dismissed already" in err  # the card is there: not a usage error either
    assert run(capsys, "curate", "undo", "--db", db)[0] == 0
    code, _, err = run(capsys, "curate", "resolve", str(card), "accept", "--db", db)
    assert code == 2 and "no action 'accept'" in err
    code, _, err = run(capsys, "curate", "resolve", str(card), "retarget", "--db", db)
    assert code == 2 and "needs --target" in err
    source = vault.root / listed["cards"][0]["payload"]["source_path"]
    source.write_text(source.read_text() + "\nnoch etwas\n", encoding="utf-8")
    code, _, err = run(capsys, "curate", "resolve", str(card), "retarget", "--target", "Gamma", "--db", db)
    assert code == 1 and "changed since it was indexed" in err
    code, outcome, _ = run(capsys, "curate", "undo", "--db", db, "--json")
    assert code == 0 and outcome == {"undone": None}
    code, report, _ = run(capsys, "curate", "refresh", "--db", db, "--json")
    assert code == 0 and report["new_total"] == 0 and set(report["kinds"]) == set(listed["counts"])
