"""alias_link cards: a link that names an alias stays unresolved (Obsidian's rule); its card offers
to write it as [[Target|alias]], so it resolves and still reads as written."""

from __future__ import annotations

import pytest

from curation_support import index, query, settings_for
from mindtui.audience import Audience
from mindtui.service import InputError, Service

PAGE = ("Met [[Leah]], [[leah#Bio]], [[Leah|her]] and [text](Leah), `[[Leah]]` in code.\n"
        "| who | [[Leah]] |\n"
        "Also [[Sam]] and [[Nobody]].\n")


@pytest.fixture
def queue(vault, db_path):
    vault.write("People/Leah Ferguson.md", "---\naliases: [Leah]\n---\n# Leah\n", dedent=False)
    vault.write("People/Sam A.md", "---\naliases: [Sam]\n---\n# Sam A\n", dedent=False)
    vault.write("People/Sam B.md", "---\naliases: [sam]\n---\n# Sam B\n", dedent=False)
    vault.write("Notes/Page.md", PAGE, dedent=False)
    settings = settings_for(db_path, vault)
    index(settings, vault)  # the import refreshes the link cards
    service = Service(settings, audience=Audience.OWNER)
    yield service
    service.close()


def test_a_link_to_an_alias_is_an_alias_card_not_a_missing_note(queue):
    counts = queue.curation_counts()
    assert (counts["alias_link"], counts["unresolved_link"]) == (2, 1)  # Leah, Sam; only Nobody is missing
    (missing,) = queue.curation_list("unresolved_link")
    assert missing.payload["target"] == "Nobody"
    leah = next(c for c in queue.curation_list("alias_link") if c.payload["target_key"] == "leah")
    assert [o["path"] for o in leah.payload["owners"]] == ["People/Leah Ferguson.md"]
    assert leah.payload["links_total"] == 5
    assert "is an alias of People/Leah Ferguson.md" in leah.description
    assert [a["name"] for a in leah.actions] == ["link", "dismiss"]


def test_link_writes_target_with_the_alias_as_label_and_undo_restores(queue, vault, db_path):
    before = (vault.root / "Notes/Page.md").read_bytes()
    leah = next(c for c in queue.curation_list("alias_link") if c.payload["target_key"] == "leah")
    outcome = queue.curation_resolve(leah.item_id, "link")
    assert outcome.status == "resolved" and outcome.changed_files == ["Notes/Page.md"]
    assert outcome.message == "the link now names People/Leah Ferguson.md and still reads as written"
    assert (vault.root / "Notes/Page.md").read_text(encoding="utf-8") == (
        "Met [[Leah Ferguson|Leah]], [[Leah Ferguson#Bio|leah]], [[Leah Ferguson|her]] and"
        " [text](../People/Leah%20Ferguson.md), `[[Leah]]` in code.\n"
        "| who | [[Leah Ferguson\\|Leah]] |\n"
        "Also [[Sam]] and [[Nobody]].\n")
    assert query(db_path, "SELECT count(*) FROM note_links WHERE resolution = 'resolved'") == [(5,)]
    assert [c.payload["target_key"] for c in queue.curation_list("alias_link")] == ["sam"]
    queue.curation_undo()
    assert (vault.root / "Notes/Page.md").read_bytes() == before


def test_an_alias_two_notes_carry_needs_the_note(queue, vault):
    sam = next(c for c in queue.curation_list("alias_link") if c.payload["target_key"] == "sam")
    assert [o["path"] for o in sam.payload["owners"]] == ["People/Sam A.md", "People/Sam B.md"]
    with pytest.raises(InputError, match="choose the note with --target: People/Sam A.md, People/Sam B.md"):
        queue.curation_resolve(sam.item_id, "link")
    with pytest.raises(InputError, match="does not carry the alias"):
        queue.curation_resolve(sam.item_id, "link", target="Leah Ferguson")
    queue.curation_resolve(sam.item_id, "link", target="People/Sam B")
    assert "Also [[Sam B|Sam]] and [[Nobody]]." in (vault.root / "Notes/Page.md").read_text(encoding="utf-8")


def test_the_card_closes_when_the_alias_goes_and_a_missing_card_takes_over(queue, vault, db_path):
    vault.write("People/Leah Ferguson.md", "# Leah\n", dedent=False)
    index(settings_for(db_path, vault), vault)
    assert [c.payload["target_key"] for c in queue.curation_list("alias_link")] == ["sam"]
    assert sorted(c.payload["target"] for c in queue.curation_list("unresolved_link")) == ["Leah", "Nobody"]
