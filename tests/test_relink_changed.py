"""An import re-resolves only the links that name a note it wrote or deleted (vault.relink), and
refreshes only the anchor rows of notes whose incoming references may have changed, and ends in
exactly the database a run that re-resolves every link and refreshes every anchor row gives: for
an edit, an addition, a rename and a deletion, with links that become resolved, broken or
ambiguous on the way; a case-only rename, a move into an excluded folder and a `private: true`
toggle."""

from __future__ import annotations

import shutil

from conftest import dump_database, run_import

from mindtui.store import open_database
from mindtui.store.meta import set_meta
from mindtui.vault.relink import RELINK_PENDING_KEY, notes_to_relink

UNRELATED = 60  # notes whose links name none of the notes changed below


def anchor_rows(db_path) -> list[tuple]:
    """Each note's anchor row: the digest of the lines that link to it, and the indexed text."""
    conn = open_database(db_path)
    try:
        return conn.execute(
            "SELECT n.path, a.text_hash, f.body FROM note_anchors a JOIN notes n USING (note_id)"
            " JOIN chunks_fts f ON f.rowid = -a.anchor_id ORDER BY n.path").fetchall()
    finally:
        conn.close()


def write_vault(vault) -> None:
    vault.write("Hub.md", "# Hub\n\nSee [[Target]], [[Later]], [[Gone]], [[Twin]] and [[Folder/Moved]].\n")
    vault.write("Target.md", "---\naliases: [Goal]\n---\n# Target\n\nThe target links [[Hub]].\n")
    vault.write("Gone.md", "# Gone\n\nTo be deleted.\n")
    vault.write("A/Twin.md", "# Twin\n\nThe first twin.\n")
    vault.write("Folder/Moved.md", "# Moved\n\nTo be renamed; it links [[Target]].\n")
    vault.write("Alias user.md", "# Alias user\n\nNames [[Goal]], an alias, and [[target|the target]].\n")
    for number in range(UNRELATED):
        vault.write(f"Other/Other {number}.md", f"# Other {number}\n\nLinks [[Other {(number + 1) % UNRELATED}]].\n")


def changes(vault):
    """(what, change) pairs applied one after the other."""
    return [
        ("edit", lambda: vault.write("Target.md",
                                     "---\naliases: [Aim]\n---\n# Target\n\nNow aimed at [[Alias user]].\n")),
        ("add resolves a missing link", lambda: vault.write("Later.md", "# Later\n\nIt exists now.\n")),
        ("add makes a link ambiguous", lambda: vault.write("B/Twin.md", "# Twin\n\nThe second twin.\n")),
        ("rename breaks a link", lambda: vault.rename("Folder/Moved.md", "Elsewhere/Renamed.md")),
        ("delete breaks a link", lambda: vault.remove("Gone.md")),
        ("delete resolves an ambiguous one", lambda: vault.remove("A/Twin.md")),
        ("a new alias", lambda: vault.write("Later.md", "---\naliases: [Goal]\n---\n# Later\n\nAliased.\n")),
    ]


def compare_with_relinking_everything(vault, db_path, tmp_path, steps, relinks_all: frozenset = frozenset()) -> None:
    """Apply each change, import, and compare with the same database brought forward by an
    import that relinks every note. relinks_all: the changes that make the import relink every
    note itself (what is not indexed changed)."""
    write_vault(vault)
    run_import(db_path, vault.root)
    full = tmp_path / "full.db"
    for what, change in steps:
        shutil.copy(db_path, full)  # the same database, brought forward by an import that relinks all
        change()
        limited = run_import(db_path, vault.root)
        conn = open_database(full)
        try:
            set_meta(conn, RELINK_PENDING_KEY, "1")  # what an interrupted import leaves: every link again
        finally:
            conn.close()
        everything = run_import(full, vault.root)
        assert everything.notes_relink_checked > UNRELATED, what  # it did look at every note
        if what in relinks_all:
            assert limited.notes_relink_checked > UNRELATED, (what, limited.notes_relink_checked)
        else:
            assert limited.notes_relink_checked < 10, (what, limited.notes_relink_checked)
        assert limited.notes_relinked == everything.notes_relinked, what
        assert dump_database(db_path) == dump_database(full), what
        assert anchor_rows(db_path) == anchor_rows(full), what


def test_a_run_relinking_only_what_changed_equals_one_relinking_everything(vault, db_path, tmp_path):
    compare_with_relinking_everything(vault, db_path, tmp_path, changes(vault))
    conn = open_database(db_path)
    try:
        links = dict(conn.execute(
            "SELECT target_path, resolution FROM note_links l JOIN notes n USING (note_id)"
            " WHERE n.path = 'Hub.md'").fetchall())
    finally:
        conn.close()
    # What the changes did to Hub's links, so the comparison above covered them.
    assert links == {"Target": "resolved", "Later": "resolved", "Gone": "missing", "Twin": "resolved",
                     "Folder/Moved": "missing"}


def test_case_renames_excluded_moves_and_privacy_toggles_equal_relinking_everything(vault, db_path, tmp_path):
    private_target = "---\naliases: [Goal]\nprivate: true\n---\n# Target\n\nThe target links [[Hub]].\n"
    public_target = "---\naliases: [Goal]\n---\n# Target\n\nThe target links [[Hub]] again.\n"
    steps = [
        ("a case-only rename", lambda: vault.rename("Folder/Moved.md", "Folder/moved.md")),
        ("a case-only rename of a linked file name", lambda: vault.rename("Target.md", "TARGET.md")),
        ("a move into an excluded folder", lambda: vault.rename("A/Twin.md", "Templates/Twin.md")),
        ("private: true", lambda: vault.write("TARGET.md", private_target)),
        ("private toggled back", lambda: vault.write("TARGET.md", public_target)),
    ]
    compare_with_relinking_everything(vault, db_path, tmp_path, steps,
                                      relinks_all=frozenset({"a move into an excluded folder"}))
    conn = open_database(db_path)
    try:
        links = dict(conn.execute(
            "SELECT target_path, resolution FROM note_links l JOIN notes n USING (note_id)"
            " WHERE n.path = 'Hub.md'").fetchall())
        (private,) = conn.execute("SELECT private FROM notes WHERE path = 'TARGET.md'").fetchone()
    finally:
        conn.close()
    assert links["Twin"] == "out_of_corpus" and links["Target"] == "resolved", links  # what the comparison covered
    assert not private


def test_an_import_stopped_before_its_relink_makes_the_next_relink_everything(vault, db_path):
    write_vault(vault)
    run_import(db_path, vault.root)
    conn = open_database(db_path)
    try:
        set_meta(conn, RELINK_PENDING_KEY, "1")
    finally:
        conn.close()
    assert run_import(db_path, vault.root).notes_relink_checked > UNRELATED
    assert run_import(db_path, vault.root).notes_relink_checked == 0  # done: nothing changed since


def test_a_new_attachment_relinks_everything(vault, db_path):
    write_vault(vault)
    vault.write("Pictures.md", "# Pictures\n\n![[diagram.png]]\n")
    run_import(db_path, vault.root)
    vault.write_bytes("diagram.png", b"\x89PNG\r\n")
    report = run_import(db_path, vault.root)
    assert report.notes_relink_checked > UNRELATED and report.notes_relinked == 1


def test_which_notes_a_changed_name_concerns():
    targets = [("n1", "Folder/Target"), ("n2", "target.md"), ("n3", "Other"), ("n4", ".."), ("n5", "sub/TARGET")]
    assert notes_to_relink(targets, {"target"}) == {"n1", "n2", "n4", "n5"}
    assert notes_to_relink(targets, None) is None
