"""Every vault write stays inside the vault: it goes to the real path of its note (a symlink stays a
symlink), refuses a real path outside the vault or in a dot folder (nothing written, the card stays
open), and keeps every byte of the file but the edited lines."""

from __future__ import annotations

import errno
import os

import pytest

from curation_support import ALPHA, index, settings_for, write_vault
from mindtui.audience import Audience
from mindtui.cli import main
from mindtui.curation.rewrite import Retarget, retarget_links
from mindtui.curation.suggestions import add_related_link
from mindtui.curation.vault_edit import VaultWriteFailed
from mindtui.errors import EXIT_DATABASE
from mindtui.service import OperationFailed, Service

OWN_EXCLUDES = {"exclude": ["Templates/**", "Archiv/**"]}


def unresolved_cards(service) -> dict[tuple[str, str], object]:
    return {(c.payload["source_path"], c.payload["target"]): c for c in service.curation_list("unresolved_link")}


def test_a_note_reached_through_a_file_symlink_is_edited_where_it_lives(vault, db_path):
    write_vault(vault)
    vault.rename("Alpha.md", "Archiv/Alpha.md")  # not indexed itself: Archiv is excluded
    os.symlink(vault.root / "Archiv" / "Alpha.md", vault.root / "Alpha.md")
    settings = settings_for(db_path, vault, **{"import": OWN_EXCLUDES})
    index(settings, vault)
    with Service(settings, audience=Audience.OWNER) as service:
        card = unresolved_cards(service)[("Alpha.md", "Fehlt")]
        service.curation_resolve(card.item_id, "retarget", target="Gamma")
        assert (vault.root / "Alpha.md").is_symlink()
        assert "Siehe [[Gamma]] und [[Gamma|das Fehlende]]" in (vault.root / "Archiv" / "Alpha.md").read_text()
        service.curation_undo()
        assert (vault.root / "Alpha.md").is_symlink()
        assert (vault.root / "Archiv" / "Alpha.md").read_text() == ALPHA


def test_a_note_whose_real_file_is_outside_the_vault_is_not_written(tmp_path, vault, db_path):
    write_vault(vault)
    outside = tmp_path / "anderswo"
    outside.mkdir()
    (vault.root / "Alpha.md").rename(outside / "Alpha.md")
    os.symlink(outside / "Alpha.md", vault.root / "Alpha.md")
    settings = settings_for(db_path, vault, **{"import": {"follow_external_symlinks": True}})
    index(settings, vault)
    with Service(settings, audience=Audience.OWNER) as service:
        card = unresolved_cards(service)[("Alpha.md", "Fehlt")]
        with pytest.raises(OperationFailed, match="Alpha.md leads through a symlink to .*, outside the vault; "
                                                  "nothing was written"):
            service.curation_resolve(card.item_id, "retarget", target="Gamma")
        assert service.curation_card(card.item_id).status == "open"
    assert (vault.root / "Alpha.md").is_symlink() and (outside / "Alpha.md").read_text() == ALPHA


def test_create_refuses_a_folder_linked_out_of_the_vault_and_dot_folders(tmp_path, vault, db_path):
    vault.write("Quelle.md", "# Quelle\n\n[[Ext/Neu]], [[.versteckt/Neu]], [[Innen/Neu]], [[Ordner/Neu]].\n")
    outside = tmp_path / "extern"
    outside.mkdir()
    os.symlink(outside, vault.root / "Ext")  # not followed by the importer
    (vault.root / ".versteckt").mkdir()
    os.symlink(vault.root / ".versteckt", vault.root / "Innen")  # followed, but its real path is a dot folder
    settings = settings_for(db_path, vault, curation={"note_template": None})
    index(settings, vault)
    with Service(settings, audience=Audience.OWNER) as service:
        cards = unresolved_cards(service)
        for target, why in (("Ext/Neu", "Ext/Neu.md leads through a symlink to .*, outside the vault"),
                            (".versteckt/Neu", r"\.versteckt/Neu.md is in a dot folder"),
                            ("Innen/Neu", r"Innen/Neu.md leads through a symlink to \.versteckt/Neu.md, in a dot")):
            card = cards[("Quelle.md", target)]
            with pytest.raises(OperationFailed, match=why):
                service.curation_resolve(card.item_id, "create")
            assert service.curation_card(card.item_id).status == "open"
        service.curation_resolve(cards[("Quelle.md", "Ordner/Neu")].item_id, "create")  # an ordinary folder
    assert list(outside.iterdir()) == [] and list((vault.root / ".versteckt").iterdir()) == []
    assert (vault.root / "Ordner" / "Neu.md").read_text() == "# Neu\n"


# -- one line-editing function: every byte but the edited lines stays ---------------------------

def related(data: bytes) -> str | None:
    return add_related_link(data, "N.md", "## Verwandt", "Y", "Y.md")


def test_a_related_link_lands_on_its_line_with_lone_carriage_returns():
    # Lone \r breaks lines for the importer too: the link goes at the end of the section, not of the file.
    assert related(b"# N\r## Verwandt\r- [[X]]\r## Danach\rText\r") == "# N\r## Verwandt\r- [[X]]\r- [[Y]]\r## Danach\rText\r"


def test_a_related_link_keeps_mixed_endings_the_bom_and_a_missing_final_newline():
    mixed = "\ufeff# N\r\n\r\nText\n\n## Verwandt\r\n- [[X]]"
    assert related(mixed.encode()) == mixed + "\r\n- [[Y]]"  # the new line ends as the one before it
    assert related(b"A\rB\n\n\n") == "A\rB\n\n\n## Verwandt\n\n- [[Y]]\n"  # a new section: appended, nothing dropped
    assert related(b"A\r\nB") == "A\r\nB\r\n\r\n## Verwandt\r\n\r\n- [[Y]]"
    assert related(b"") == "## Verwandt\n\n- [[Y]]\n"


def test_retargeting_keeps_every_other_byte():
    data = "\ufeffA [[Fehlt]]\rB `[[Fehlt]]`\r\nC [[Fehlt|x]]\n\nD ![[Fehlt#Teil]]".encode()
    change = Retarget(lambda path: path == "Fehlt", "Gamma", "Gamma.md")
    assert retarget_links(data, "N.md", change) == (
        "\ufeffA [[Gamma]]\rB `[[Fehlt]]`\r\nC [[Gamma|x]]\n\nD ![[Gamma#Teil]]".encode(), 3)


def test_a_retarget_through_the_queue_keeps_the_bom_and_mixed_endings(vault, db_path):
    write_vault(vault)
    original = "\ufeff# Alpha\r\n\r\nSiehe [[Fehlt]].\rCode `[[Fehlt]]`.\n\nEnde [[Fehlt|hier]]"
    vault.write_bytes("Alpha.md", original.encode())
    settings = settings_for(db_path, vault)
    index(settings, vault)
    with Service(settings, audience=Audience.OWNER) as service:
        service.curation_resolve(unresolved_cards(service)[("Alpha.md", "Fehlt")].item_id, "retarget", target="Gamma")
        assert (vault.root / "Alpha.md").read_bytes() == original.replace(
            "Siehe [[Fehlt]]", "Siehe [[Gamma]]").replace("[[Fehlt|hier]]", "[[Gamma|hier]]").encode()
        service.curation_undo()
    assert (vault.root / "Alpha.md").read_bytes() == original.encode()


# -- a disk that refuses ------------------------------------------------------------------------

def test_a_full_disk_leaves_the_note_and_the_card_as_they_were(vault, db_path, monkeypatch, capsys):
    write_vault(vault)
    settings = settings_for(db_path, vault)
    index(settings, vault)

    def disk_full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with Service(settings, audience=Audience.OWNER) as service:
        card = unresolved_cards(service)[("Alpha.md", "Fehlt")]
        monkeypatch.setattr(os, "fsync", disk_full)  # the temporary file's data cannot be put on the disk
        with pytest.raises(VaultWriteFailed, match=r"cannot write .*Alpha.md: No space left on device; the file is "
                                                   r"unchanged \(the disk is full: free some space"):
            service.curation_resolve(card.item_id, "retarget", target="Gamma")
        assert main(["curate", "resolve", str(card.item_id), "retarget", "--target", "Gamma",
                     "--db", str(db_path)]) == EXIT_DATABASE
        assert capsys.readouterr().err.count("\n") == 1  # one line, no traceback
        assert (vault.root / "Alpha.md").read_text() == ALPHA
        assert sorted(p.name for p in vault.root.iterdir() if p.name.startswith(".")) == []  # no temporary file
        assert service.curation_card(card.item_id).status == "open" and service.curation_undo() is None
        monkeypatch.undo()  # space again: the same answer goes through
        service.curation_resolve(card.item_id, "retarget", target="Gamma")
    assert "Siehe [[Gamma]]" in (vault.root / "Alpha.md").read_text()
