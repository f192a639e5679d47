"""Kill a curation answer (and an undo) with SIGKILL between its database commit and its file write,
and after; after a restart (the nightly import) the database is sound, the vault file and the
database agree, and running the command again ends where one clean run does."""

from __future__ import annotations

import hashlib
import signal
import subprocess
import sys

import apsw
import pytest

from conftest import Vault, dump_database
from curation_support import index, settings_for, write_vault
from mindtui.audience import Audience
from mindtui.cli import main
from mindtui.service import Service
from mindtui.store import open_database

# `mindtui curate ...` in a child process that SIGKILLs itself at a chosen point of the answer's own work:
#   commit N   right after the N-th transaction of mindtui.curation.actions commits;
#   written N  right after the N-th vault file is written (atomic_write returned).
# As in test_crash_safety, counting the answer's own calls makes the kill land at the same point
# on any machine.
CURATION_KILLED_AT = """
import contextlib, os, signal, sys
from mindtui.cli import main
from mindtui.curation import actions

point, when = sys.argv[1], int(sys.argv[2])
calls = 0

def counted():
    global calls
    calls += 1
    if calls == when:
        os.kill(os.getpid(), signal.SIGKILL)

if point == "commit":
    committing = actions.immediate

    @contextlib.contextmanager
    def immediate(conn):
        with committing(conn) as inside:
            yield inside
        counted()

    actions.immediate = immediate
else:
    writing = actions.atomic_write

    def atomic_write(*args, **kwargs):
        writing(*args, **kwargs)
        counted()

    actions.atomic_write = atomic_write
main(["curate", *sys.argv[3:]])
sys.exit(3)  # the command ended before the kill point
"""


def curate_killed_at(db_path, point: str, when: int, *command: str) -> None:
    done = subprocess.run([sys.executable, "-c", CURATION_KILLED_AT, point, str(when), *command, "--db", str(db_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == -signal.SIGKILL, f"not killed at {point} {when}: exit {done.returncode} {done.stderr}"


def indexed_queue(root):
    """A vault with link cards, imported as the nightly import does. Without its template a created
    note is a heading only, whatever the clock says."""
    vault = Vault(root / "vault")
    write_vault(vault)
    vault.remove("Templates/Neue Notiz.md")
    settings = settings_for(root / "mindtui.db", vault)
    index(settings, vault)
    return vault, settings


def card_id(settings, source="Alpha.md", target="Fehlt") -> int:
    with Service(settings, audience=Audience.OWNER) as service:
        cards = service.curation_list("unresolved_link", status=None)
    return next(c.item_id for c in cards if (c.payload["source_path"], c.payload["target"]) == (source, target))


def curate(settings, *command: str) -> int:
    return main(["curate", *command, "--db", str(settings.db_path), "--quiet"])


def state(settings, vault) -> dict:
    """What the vault and the database say, without what differs between two folders and two clocks."""
    dump = dump_database(settings.db_path)
    conn = open_database(settings.db_path, migrate=False)
    try:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(notes)")]
        mtime = columns.index("mtime_ns")
        dump["notes"] = [row[:mtime] + row[mtime + 1:] for row in dump["notes"]]
        del dump["meta"]  # the vault's folder
        dump["cards"] = conn.execute("SELECT kind, subject_key, status, answer, snoozed_until FROM curation_items"
                                     " ORDER BY kind, subject_key").fetchall()
        dump["answers"] = conn.execute("SELECT i.subject_key, a.action, a.args, a.files, a.prev_status, a.undone"
                                       " FROM curation_actions a JOIN curation_items i USING (item_id)"
                                       " ORDER BY a.action_id").fetchall()
    finally:
        conn.close()
    dump["files"] = sorted((p.relative_to(vault.root).as_posix(), p.read_bytes())
                           for p in vault.root.rglob("*") if p.is_file())
    return dump


def assert_sound_and_in_step(settings, vault) -> None:
    conn = apsw.Connection(str(settings.db_path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        indexed = dict(conn.execute("SELECT path, content_hash FROM notes").fetchall())
    finally:
        conn.close()
    on_disk = {p.relative_to(vault.root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
               for p in vault.root.rglob("*.md") if not p.relative_to(vault.root).as_posix().startswith("Templates/")}
    assert indexed == on_disk


ANSWERS = {"retarget": ("retarget", "--target", "Gamma"), "create": ("create",)}
# commit 1: the answer is recorded, its file not written yet; written 1: the file is written, the
# record not finished yet; commit 2: everything done (the re-import after it not run).
KILL_POINTS = [("commit", 1), ("written", 1), ("commit", 2)]


@pytest.mark.parametrize("answer", sorted(ANSWERS))
@pytest.mark.parametrize("point, when", KILL_POINTS)
def test_a_killed_answer_is_finished_and_a_rerun_equals_a_clean_run(tmp_path, answer, point, when):
    clean_vault, clean = indexed_queue(tmp_path / "clean")
    assert curate(clean, "resolve", str(card_id(clean)), *ANSWERS[answer]) == 0

    vault, settings = indexed_queue(tmp_path / "crashed")
    item = str(card_id(settings))
    curate_killed_at(settings.db_path, point, when, "resolve", item, *ANSWERS[answer])
    index(settings, vault)  # the restart: the nightly import
    assert_sound_and_in_step(settings, vault)
    assert curate(settings, "resolve", item, *ANSWERS[answer]) == 1  # answered already (exit 1): the answer stands
    assert state(settings, vault) == state(clean, clean_vault)


@pytest.mark.parametrize("point, when", [("written", 1), ("commit", 1)])
def test_a_killed_undo_is_finished_by_running_it_again(tmp_path, point, when):
    clean_vault, clean = indexed_queue(tmp_path / "clean")
    vault, settings = indexed_queue(tmp_path / "crashed")
    for each in (clean, settings):
        assert curate(each, "resolve", str(card_id(each)), *ANSWERS["retarget"]) == 0
    assert curate(clean, "undo") == 0

    curate_killed_at(settings.db_path, point, when, "undo")
    index(settings, vault)
    assert_sound_and_in_step(settings, vault)
    assert curate(settings, "undo") == 0  # undoes what is left, or says there is nothing to undo
    assert state(settings, vault) == state(clean, clean_vault)


def test_an_edit_made_after_the_kill_is_kept(tmp_path):
    vault, settings = indexed_queue(tmp_path)
    item = str(card_id(settings))
    curate_killed_at(settings.db_path, "commit", 1, "resolve", item, *ANSWERS["retarget"])
    mine = vault.write("Alpha.md", "# Alpha\n\nMeine Fassung, ohne Link.\n", dedent=False).read_bytes()
    index(settings, vault)
    assert (vault.root / "Alpha.md").read_bytes() == mine  # not overwritten by the answer
    assert_sound_and_in_step(settings, vault)
    assert curate(settings, "undo") == 1  # the answer's text is not there to undo: nothing is undone
    assert (vault.root / "Alpha.md").read_bytes() == mine
