"""Answering curation cards: what each action does to the vault file and the database, the content
check that refuses a write over a changed note, atomic writes, and undo (file bytes and card)."""

from __future__ import annotations

import os
import stat

import pytest

from curation_support import ALPHA, nightly, query, settings_for, write_vault
from mindtui.audience import Audience
from mindtui.curation.suggestions import add_related_link
from mindtui.service import InputError, NotFound, NoteChanged, OperationFailed, Service


@pytest.fixture
def queue(vault, db_path):
    write_vault(vault)
    settings = settings_for(db_path, vault)
    nightly(settings, vault)
    service = Service(settings, audience=Audience.OWNER)
    yield service
    service.close()


def card_of(service, kind, source="Alpha.md"):
    found = service.curation_list(kind)
    return next(c for c in found if c.payload.get("source_path", source) == source)


def links_of(db_path, path):
    return query(db_path, "SELECT l.target_raw, l.resolution, t.path FROM note_links l JOIN notes n ON"
                          " n.note_id = l.note_id LEFT JOIN notes t ON t.note_id = l.resolved_note_id"
                          " WHERE n.path = ? ORDER BY l.seq", (path,))


def test_create_writes_the_note_from_the_template_imports_it_and_undo_removes_it(queue, vault, db_path):
    card = card_of(queue, "unresolved_link")
    outcome = queue.curation_resolve(card.item_id, "create")
    created = vault.root / "Fehlt.md"
    assert outcome.changed_files == ["Fehlt.md"] and outcome.status == "resolved" and outcome.notices == []
    text = created.read_text(encoding="utf-8")
    assert text.startswith('---\ncreated: "20') and "# Fehlt\n" in text and "{{title}}" not in text
    assert "{{time}}" not in text and "{{author}} bleibt." in text  # unknown variables stay as written
    # Imported at once: the links resolve, and Beta's card for the same note closed by itself.
    assert ("Fehlt", "resolved", "Fehlt.md") in links_of(db_path, "Alpha.md")
    assert queue.curation_list("unresolved_link") == []
    undone = queue.curation_undo()
    assert undone.undone and undone.changed_files == ["Fehlt.md"] and not created.exists()
    assert {c.payload["source_path"] for c in queue.curation_list("unresolved_link")} == {"Alpha.md", "Beta.md"}
    assert queue.curation_card(card.item_id).answer is None
    assert query(db_path, "SELECT count(*) FROM notes WHERE path = 'Fehlt.md'") == [(0,)]
    assert queue.curation_undo() is None  # nothing left to undo


def test_create_never_overwrites_and_honours_the_folder_setting(vault, db_path):
    write_vault(vault)
    settings = settings_for(db_path, vault, curation={"new_note_folder": "Neu", "note_template": None})
    nightly(settings, vault)
    with Service(settings, audience=Audience.OWNER) as service:
        card = card_of(service, "unresolved_link")
        vault.write("Neu/Fehlt.md", "mine\n", dedent=False)
        with pytest.raises(OperationFailed, match="exists already"):
            service.curation_resolve(card.item_id, "create")
        assert (vault.root / "Neu/Fehlt.md").read_text() == "mine\n"
        vault.remove("Neu/Fehlt.md")
        service.curation_resolve(card.item_id, "create")
        assert (vault.root / "Neu/Fehlt.md").read_text() == "# Fehlt\n"  # no template: a heading only


def test_retarget_rewrites_every_link_keeping_label_heading_and_embed_and_undo_restores_the_bytes(
        queue, vault, db_path):
    path = vault.root / "Alpha.md"
    os.chmod(path, 0o640)
    before = path.read_bytes()
    card = card_of(queue, "unresolved_link")
    outcome = queue.curation_resolve(card.item_id, "retarget", target="Gamma")
    assert outcome.changed_files == ["Alpha.md"]
    assert path.read_text() == ALPHA.replace("[[Fehlt]] und", "[[Gamma]] und").replace(
        "[[Fehlt|das", "[[Gamma|das").replace("![[Fehlt#Teil]]", "![[Gamma#Teil]]")
    assert "`[[Fehlt]]`" in path.read_text()  # code is not a link: untouched
    assert stat.S_IMODE(path.stat().st_mode) == 0o640 and sorted(p.name for p in vault.root.iterdir() if
                                                                   p.name.startswith(".")) == []
    assert [row for row in links_of(db_path, "Alpha.md") if row[0].startswith("Gamma")] == [
        ("Gamma", "resolved", "Gamma.md"), ("Gamma", "resolved", "Gamma.md"), ("Gamma#Teil", "resolved", "Gamma.md")]
    assert queue.curation_card(card.item_id).answer["target_path"] == "Gamma.md"
    queue.curation_undo()
    assert path.read_bytes() == before
    assert queue.curation_card(card.item_id).status == "open"


def test_pick_writes_the_vault_path_and_the_link_reads_as_written(queue, vault):
    card = queue.curation_list("ambiguous_link")[0]
    with pytest.raises(InputError, match="not one of the candidates"):
        queue.curation_resolve(card.item_id, "pick", target="Gamma")
    with pytest.raises(InputError, match="needs --target"):
        queue.curation_resolve(card.item_id, "pick")
    queue.curation_resolve(card.item_id, "pick", target="B/Doppelt.md")
    assert "Auch [[B/Doppelt|Doppelt]] und [[B/Doppelt|zwei]].\n" in (vault.root / "Alpha.md").read_text()
    assert queue.curation_list("ambiguous_link") == []


def test_accept_links_under_the_related_heading_and_undo_takes_it_out(queue, vault, db_path):
    card = queue.curation_list("link_suggestion")[0]
    source, target = card.payload["source"]["path"], card.payload["target"]["title"]
    before = (vault.root / source).read_bytes()
    queue.curation_resolve(card.item_id, "accept")
    assert (vault.root / source).read_bytes() == before + f"\n## Verwandt\n\n- [[{target}]]\n".encode()
    assert query(db_path, "SELECT count(*) FROM edges WHERE kind = 'links_to' AND source_id = ? AND target_id = ?",
                 (card.payload["source"]["note_id"], card.payload["target"]["note_id"])) == [(1,)]
    assert queue.curation_refresh()["kinds"]["link_suggestion"]["new"] == 0  # linked now: no new card
    queue.curation_undo()
    assert (vault.root / source).read_bytes() == before
    assert queue.curation_card(card.item_id).status == "open"


def test_related_link_goes_at_the_end_of_an_existing_section_once():
    text = "# N\n\n## Verwandt\n\n- [[X]]\n\n## Danach\n\nText\n"
    added = add_related_link(text.encode(), "N.md", "## Verwandt", "Y", "Ordner/Y.md")
    assert added == "# N\n\n## Verwandt\n\n- [[X]]\n- [[Y]]\n\n## Danach\n\nText\n"
    assert add_related_link(added.encode(), "N.md", "## Verwandt", "Y", "Ordner/Y.md") is None  # already there
    crlf = add_related_link(b"# N\r\n## verwandt\r\n", "N.md", "## Verwandt", "Y", "Y.md")
    assert crlf == "# N\r\n## verwandt\r\n\r\n- [[Y]]\r\n"  # heading matched without case, line endings kept
    fenced = "```\n## Verwandt\n```\n"
    assert add_related_link(fenced.encode(), "N.md", "## Verwandt", "Y", "Y.md") == fenced + "\n## Verwandt\n\n- [[Y]]\n"


def test_a_note_changed_since_indexing_is_not_written_and_the_card_checks_again(queue, vault):
    card = card_of(queue, "unresolved_link")
    changed = "# Alpha\n\nNeu geschrieben.\n\n\nApfelwort. Siehe [[Fehlt]].\n"
    vault.write("Alpha.md", changed, dedent=False)
    with pytest.raises(NoteChanged, match="Alpha.md changed since it was indexed"):
        queue.curation_resolve(card.item_id, "retarget", target="Gamma")
    assert (vault.root / "Alpha.md").read_text() == changed  # untouched
    again = queue.curation_card(card.item_id)
    assert again.status == "open" and [link["line"] for link in again.payload["links"]] == [6]  # re-imported
    queue.curation_resolve(card.item_id, "retarget", target="Gamma")  # now it goes through
    assert "Siehe [[Gamma]]." in (vault.root / "Alpha.md").read_text()


def test_undo_refuses_when_the_file_changed_after_the_answer(queue, vault):
    card = card_of(queue, "unresolved_link")
    queue.curation_resolve(card.item_id, "retarget", target="Gamma")
    edited = (vault.root / "Alpha.md").read_text() + "Später dazu.\n"
    vault.write("Alpha.md", edited, dedent=False)
    with pytest.raises(OperationFailed, match="nothing was undone"):
        queue.curation_undo()
    assert (vault.root / "Alpha.md").read_text() == edited
    assert queue.curation_card(card.item_id).status == "resolved"


def test_undo_is_in_the_database_and_goes_back_one_answer_at_a_time(queue, db_path, vault):
    first = card_of(queue, "unresolved_link")
    second = card_of(queue, "unresolved_link", "Beta.md")
    queue.curation_resolve(first.item_id, "dismiss")
    queue.curation_resolve(second.item_id, "dismiss")
    with Service(queue.settings, audience=Audience.OWNER) as other:
        assert other.curation_undo().item_id == second.item_id
        assert other.curation_undo().item_id == first.item_id
    assert {c.item_id for c in queue.curation_list("unresolved_link")} == {first.item_id, second.item_id}
    with pytest.raises(InputError, match="unresolved_link cards have no action 'snooze'"):
        queue.curation_resolve(first.item_id, "snooze")
    with pytest.raises(InputError, match="dismiss takes no target"):
        queue.curation_resolve(first.item_id, "dismiss", target="Gamma")


def change_edges(db_path) -> int:
    return query(db_path, "SELECT count(*) FROM edges WHERE signal = 'change'")[0][0]


def test_including_a_mass_edit_adds_its_change_edges_and_undo_removes_them(queue, db_path):
    assert change_edges(db_path) == 1  # S1: Alpha-Gamma; S2 (3 notes > 2) is left out
    card = queue.curation_list("mass_edit")[0]
    outcome = queue.curation_resolve(card.item_id, "include")
    assert outcome.status == "resolved" and outcome.notices == []
    assert change_edges(db_path) == 3  # Alpha-Beta, Beta-Gamma, and Alpha-Gamma twice now
    assert query(db_path, "SELECT weight FROM edges WHERE signal = 'change' ORDER BY weight DESC")[0] == (2.0,)
    assert queue.curation_refresh()["kinds"]["mass_edit"]["closed"] == 0  # the nightly keeps it included
    assert change_edges(db_path) == 3
    queue.curation_undo()
    assert change_edges(db_path) == 1
    assert queue.curation_card(card.item_id).status == "open"


def test_keep_out_dismisses_an_unknown_action_is_a_usage_error_an_unknown_card_not_found(queue):
    card = queue.curation_list("mass_edit")[0]
    with pytest.raises(InputError, match="no action 'accept'"):
        queue.curation_resolve(card.item_id, "accept")
    with pytest.raises(NotFound, match="no curation card 999"):
        queue.curation_resolve(999, "dismiss")
    assert queue.curation_resolve(card.item_id, "keep_out").status == "dismissed"
    with pytest.raises(OperationFailed, match="dismissed already"):  # not a usage error: the card is there
        queue.curation_resolve(card.item_id, "include")
