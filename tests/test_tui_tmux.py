"""End to end: the real `mindtui` in a real terminal (a tmux pane of 80x24) with the real model.

Keys go in with send-keys, the screen comes back with capture-pane, the database and the vault
file are checked afterwards, and `q` must leave with exit code 0. Each key is waited on by what
it changes (`press`: text that was not on screen before it), never by a fixed sleep.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tui_support import build_fixed_db, owner_service

from mindtui.service import SearchOptions

WAIT_S = 90.0  # generous: the model loads in the background on a shared 2-core machine


class Pane:
    def __init__(self, socket: str) -> None:
        self.socket = socket

    def tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True)
        return done.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "main")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "main", *keys)

    def wait_for(self, text: str) -> str:
        """Poll the pane until it shows text (a condition, not a fixed sleep)."""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} did not appear; the pane shows:\n{self.screen()}")

    def press(self, *keys: str, shows: str) -> str:
        """Send keys, then wait for what they change: `shows` must not be on screen before them
        (text already there would end the wait before the keys took effect)."""
        before = self.screen()
        assert shows not in before, f"{shows!r} is on screen before {keys}: waiting for it says nothing\n{before}"
        self.keys(*keys)
        return self.wait_for(shows)


@pytest.fixture
def pane(tmp_path):
    socket = f"mindtui-test-{os.getpid()}-{tmp_path.name}"
    pane = Pane(socket)
    yield pane
    subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)


def test_search_resolve_a_card_and_quit_in_a_real_terminal(pane, sample_vault, db_path, tmp_path, real_model):
    build_fixed_db(sample_vault.root, db_path)
    with owner_service(db_path) as service:
        card = next(c for c in service.curation_list(kind="ambiguous_link"))
    source = sample_vault.root / card.payload["source_path"]
    before = source.read_text(encoding="utf-8")
    exit_file = tmp_path / "exit-code"
    env = {k: v for k, v in os.environ.items() if k.startswith(("MINDTUI_", "XDG_")) or k in ("HOME", "PATH")}
    command = " ".join([
        "env", *(shlex.quote(f"{k}={v}") for k, v in env.items()), "TERM=xterm-256color",
        # The editor appends a line and adds a tag, which the note's header shows once it is re-imported.
        shlex.quote("EDITOR=sh -c 'printf \"\\nNachtrag aus dem Editor\\n\" >> \"$1\";"
                    " sed -i \"s/^tags: \\[/tags: [nachtrag, /\" \"$1\"' editor"),
        shlex.quote(sys.executable), "-m", "mindtui", "--db", shlex.quote(str(db_path)), "tui",
        ";", "echo", "$?", ">", shlex.quote(str(exit_file))])
    pane.tmux("new-session", "-d", "-s", "main", "-x", "80", "-y", "24", command)

    pane.wait_for("cards")  # the status line has been read
    pane.press("Vergessenskurve", shows="Konzepte/Vergessenskurve.md")

    pane.press("F4", shows="ambiguous link")  # the Curation mode, from any field
    # one kind at a time: the first kind by name, ambiguous_link
    pane.press("C-t", shows="showing ambiguous link")
    pane.wait_for(f"#{card.item_id}  ambiguous link")  # its details are shown: it is the selected card
    # pick the intended note: the picker titled by the action and its argument
    pane.press("p", shows="pick: one of the candidate notes")
    pane.press("Enter", shows=f"modify {card.payload['source_path']}")  # the planned rewrite, as a diff
    pane.press("y", shows="the link now names")

    with owner_service(db_path) as service:
        assert service.curation_card(card.item_id).status == "resolved"
    after = source.read_text(encoding="utf-8")
    assert after != before and card.payload["candidates"][0]["path"].removesuffix(".md") in after
    pane.press("u", shows=f"undid pick on card {card.item_id}")  # undo: the file as it was, byte for byte
    assert source.read_text(encoding="utf-8") == before
    with owner_service(db_path) as service:
        assert service.curation_card(card.item_id).status == "open"

    # e: the editor (here a script that appends a line) runs in the suspended app's terminal,
    # then the note is re-imported and shown with the new line.
    pane.keys("F2")
    # alone: Textual drops text that arrives in the same read as a ctrl+u
    pane.press("C-u", shows="type to search")  # the query and its results cleared (its placeholder shows first)
    pane.press("Vergessenskurve", shows="Konzepte/Vergessenskurve.md")
    pane.press("Enter", shows="Next chunk")  # Note mode is on screen ...
    pane.wait_for("backlinks (")  # ... and the note is loaded (its neighbours come with it): e has a note to edit
    pane.keys("e")
    deadline = time.monotonic() + WAIT_S
    with owner_service(db_path) as service:
        while "Nachtrag aus dem Editor" not in service.note("Vergessenskurve", with_chunks=True).chunks[-1].text:
            assert time.monotonic() < deadline, f"the edit was not re-imported:\n{pane.screen()}"
            time.sleep(0.1)
    assert (sample_vault.root / "Konzepte/Vergessenskurve.md").read_text(encoding="utf-8").endswith(
        "\nNachtrag aus dem Editor\n")
    pane.wait_for("#nachtrag")  # the app is back, in the Note mode, showing the note as edited

    pane.keys("q")
    deadline = time.monotonic() + WAIT_S
    while not (exit_file.exists() and exit_file.read_text().strip()):
        assert time.monotonic() < deadline, pane.screen()
        time.sleep(0.1)
    assert exit_file.read_text().strip() == "0"


def test_keys_that_arrive_in_one_read_are_all_handled_in_order(pane, sample_vault, db_path, tmp_path):
    """send-keys with several keys writes them at once: three Downs after the query field loses
    focus move three rows (two were dropped), and text after ctrl+u in the same write is typed
    after the clearing (it was cleared with the old query). No model: full-text results."""
    build_fixed_db(sample_vault.root, db_path)
    with owner_service(db_path) as service:
        options = SearchOptions(mode="hybrid", limit=20, log=False, wait_for_model=False)
        third = service.search("Zettelkasten", options).results[2]
        spaced = service.search("Spaced Repetition", options).results[0]
    env = {k: v for k, v in os.environ.items() if k.startswith(("MINDTUI_", "XDG_")) or k in ("HOME", "PATH")}
    command = " ".join(["env", *(shlex.quote(f"{k}={v}") for k, v in env.items()), "TERM=xterm-256color",
                        shlex.quote(sys.executable), "-m", "mindtui", "--db", shlex.quote(str(db_path)), "tui"])
    pane.tmux("new-session", "-d", "-s", "main", "-x", "80", "-y", "24", command)
    pane.wait_for("cards")
    pane.press("Zettelkasten", shows=third.path)
    # one write: focus to the list, two rows down, open; the Note mode's header names the third result
    pane.press("Down", "Down", "Down", "Enter", shows=f"{third.title}  ·  ")
    pane.press("F2", shows="^f Filters")  # Search mode's footer: the query field has the focus again
    pane.keys("C-u", "Spaced Repetition")  # one write
    wait_for_line(pane, 0, "Spaced Repetition")  # the query line: the new text only
    wait_for_line(pane, 2, f"{spaced.title}  {spaced.note_type}")  # and its first result


def wait_for_line(pane: Pane, index: int, text: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while pane.screen().splitlines()[index].strip() != text:
        assert time.monotonic() < deadline, f"line {index} is not {text!r}:\n{pane.screen()}"
        time.sleep(0.05)


def start_app(pane, db_path: Path, exit_file: Path, redirect: str = "", **env_extra: str) -> None:
    env = {k: v for k, v in os.environ.items() if k.startswith(("MINDTUI_", "XDG_")) or k in ("HOME", "PATH")}
    env.update(env_extra)
    command = " ".join([
        "env", *(shlex.quote(f"{k}={v}") for k, v in env.items()), "TERM=xterm-256color",
        shlex.quote(sys.executable), "-m", "mindtui", "--db", shlex.quote(str(db_path)), "tui", redirect,
        ";", "echo", "$?", ">", shlex.quote(str(exit_file))])
    pane.tmux("new-session", "-d", "-s", "main", "-x", "80", "-y", "24", command)


def quit_app(pane, exit_file: Path) -> None:
    pane.keys("C-q")
    deadline = time.monotonic() + WAIT_S
    while not (exit_file.exists() and exit_file.read_text().strip()):
        assert time.monotonic() < deadline, pane.screen()
        time.sleep(0.1)
    assert exit_file.read_text().strip() == "0"


def test_a_file_changed_outside_shows_in_search_and_in_the_open_note(pane, sample_vault, db_path, tmp_path,
                                                                      real_model):
    build_fixed_db(sample_vault.root, db_path)
    exit_file = tmp_path / "exit-code"
    start_app(pane, db_path, exit_file, MINDTUI_WATCH__EMBED="false")
    pane.wait_for("cards")
    note = sample_vault.root / "Konzepte/Vergessenskurve.md"
    text = note.read_text(encoding="utf-8")

    pane.press("Quastenflosser", shows="full-text results only")  # answered (nothing matches: no vectors, no such word yet)
    note.write_text(text.replace("Die Vergessenskurve beschreibt", "Quastenflosser beschreiben"), encoding="utf-8")
    pane.wait_for("Konzepte/Vergessenskurve.md")  # the watcher imported it; the query ran again

    pane.press("Enter", shows="backlinks (")  # the note is open (its neighbours came with it)
    note.write_text(text.replace("Die Vergessenskurve beschreibt", "Ein Quastenflosserlein beschreibt"),
                    encoding="utf-8")
    pane.wait_for("Ein Quastenflosserlein")  # reloaded in place, in the Note mode
    quit_app(pane, exit_file)


def test_a_big_note_opens_while_typing(pane, sample_vault, db_path, tmp_path, real_model, monkeypatch):
    monkeypatch.setenv("MINDTUI_IMPORT__MAX_FILE_BYTES", "10000000")
    items = "".join(f"- [[Plugin {n}|Erweiterung {n}]]: a plugin that does thing number {n}, in a sentence.\n"
                    for n in range(15000))  # ~1.3 MB, one long list
    sample_vault.write("Riesenliste.md", "---\ntype: hub\n---\n# Riesenliste\n\n" + items, dedent=False)
    build_fixed_db(sample_vault.root, db_path)
    exit_file = tmp_path / "exit-code"
    start_app(pane, db_path, exit_file, MINDTUI_WATCH__EMBED="false")
    pane.wait_for("cards")
    pane.press("Riesenliste", shows="Riesenliste.md")
    pane.press("Enter", shows="Erweiterung 0")  # the first screen, rendered: the link's label, not [[...]]
    assert "[[Plugin" not in pane.screen()
    pane.press("F2", shows="^f Filters")  # while the rest renders: back to Search (its footer) and type
    pane.press("C-u", shows="search your notes")  # alone: text in the same read as ctrl+u is dropped (item 3)
    pane.press("Vergessenskurve", shows="Konzepte/Vergessenskurve.md")
    screen = pane.press("F3", shows="Erweiterung 0")
    assert "hub" in screen  # the frontmatter, as a table
    quit_app(pane, exit_file)


def test_a_job_started_and_cancelled_in_a_real_terminal(pane, sample_vault, db_path, tmp_path, real_model):
    """The nightly from the Jobs mode: it runs (embedding the sample vault with the real model takes
    long enough to cancel it), `c` stops it at a safe point, the history says so, the app goes on."""
    build_fixed_db(sample_vault.root, db_path)
    exit_file = tmp_path / "exit-code"
    start_app(pane, db_path, exit_file, MINDTUI_WATCH__EMBED="false")
    pane.wait_for("cards")
    pane.press("F5", shows="n nightly")  # the Jobs mode
    pane.press("n", shows="nightly: running")
    pane.press("c", shows="cancelled: everything committed so far is kept")
    with owner_service(db_path) as service:
        last = next(run for run in service.job_history() if run["job"] == "nightly")
    assert last["status"] == "cancelled", last
    pane.press("F2", shows="^f Filters")  # the app goes on: Search mode
    quit_app(pane, exit_file)


@pytest.mark.parametrize("redirect", ["2>&-", "2>{log}"])
def test_the_app_draws_on_the_terminal_when_stderr_is_closed_or_sent_to_a_file(pane, sample_vault, db_path,
                                                                                tmp_path, redirect):
    """Textual draws on fd 2: with `2>log` the screen went into the log, with `2>&-` the app failed."""
    build_fixed_db(sample_vault.root, db_path)
    exit_file, log = tmp_path / "exit-code", tmp_path / "stderr.log"
    start_app(pane, db_path, exit_file, redirect.format(log=shlex.quote(str(log))), MINDTUI_WATCH__EMBED="false")
    pane.wait_for("cards")
    pane.press("Zettelkasten", shows="Zettelkasten.md")
    quit_app(pane, exit_file)
    if "log" in redirect:
        assert "\x1b" not in log.read_text(encoding="utf-8", errors="replace")  # no screen in the file
