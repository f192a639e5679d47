"""A link to a note that was renamed outside Obsidian (a file manager, git mv, a sync tool) no
longer resolves; its unresolved_link card names the note it meant (store.former_paths,
curation.links._renamed_to), and `retarget` to it makes the link resolve again."""

from __future__ import annotations

import os

import pytest

from curation_support import index, query, settings_for
from mindtui.audience import Audience
from mindtui.service import Service

BODY = "# Alte Notiz\n\nDie Vergessenskurve fällt steil ab und flacht dann ab, sagt Ebbinghaus.\n"


@pytest.fixture
def renamed(vault, db_path):
    vault.write("Projekte/Alte Notiz.md", BODY, dedent=False)
    vault.write("Index.md", "# Index\n\nSiehe [[Alte Notiz]] und [[Projekte/Alte Notiz#Teil|dort]].\n", dedent=False)
    settings = settings_for(db_path, vault)
    index(settings, vault)
    (vault.root / "Archiv").mkdir()
    os.rename(vault.root / "Projekte/Alte Notiz.md", vault.root / "Archiv/Neue Notiz.md")
    index(settings, vault)
    service = Service(settings, audience=Audience.OWNER)
    yield settings, service
    service.close()


def _cards(service):
    return sorted(service.curation_list("unresolved_link"), key=lambda c: c.payload["target_key"])


def test_a_link_to_a_renamed_note_names_it_and_retarget_follows(renamed, vault, db_path):
    settings, service = renamed
    (note_id,) = query(db_path, "SELECT note_id FROM notes WHERE path = 'Archiv/Neue Notiz.md'")[0]
    short, long = _cards(service)
    assert (short.payload["target_key"], long.payload["target_key"]) == ("alte notiz", "projekte/alte notiz")
    for card in (short, long):
        assert card.payload["renamed_to"] == {"note_id": note_id, "path": "Archiv/Neue Notiz.md",
                                              "title": "Neue Notiz"}
        assert "was renamed: the note is Archiv/Neue Notiz.md now" in card.description
    outcome = service.curation_resolve(long.item_id, "retarget", target=note_id)
    assert outcome.status == "resolved"
    assert (vault.root / "Index.md").read_text(encoding="utf-8") == (
        "# Index\n\nSiehe [[Alte Notiz]] und [[Neue Notiz#Teil|dort]].\n")
    index(settings, vault)
    assert [c.payload["target_key"] for c in _cards(service)] == ["alte notiz"]

    # Renamed again: the card follows the note to where it is now.
    os.rename(vault.root / "Archiv/Neue Notiz.md", vault.root / "Archiv/Dritte.md")
    index(settings, vault)
    cards = _cards(service)  # the old name and the one the retarget wrote: both mean the note now there
    assert [(c.payload["target_key"], c.payload["renamed_to"]["path"]) for c in cards] == [
        ("alte notiz", "Archiv/Dritte.md"), ("neue notiz", "Archiv/Dritte.md")]
    assert {path for (path,) in query(db_path, "SELECT path FROM note_former_paths")} == {
        "Projekte/Alte Notiz.md", "Archiv/Neue Notiz.md"}


def test_a_former_path_is_forgotten_once_a_note_has_it_again_or_its_note_is_gone(renamed, vault, db_path):
    settings, service = renamed
    vault.write("Projekte/Alte Notiz.md", "# Alte Notiz\n\nEine ganz andere Notiz unter dem alten Namen.\n",
                dedent=False)
    index(settings, vault)
    assert _cards(service) == []  # both links resolve to the new note
    assert query(db_path, "SELECT count(*) FROM note_former_paths") == [(0,)]

    vault.remove("Projekte/Alte Notiz.md")
    index(settings, vault)
    assert all("renamed_to" not in c.payload for c in _cards(service))  # a missing note, as before any rename


def test_a_name_two_renamed_notes_had_names_neither(vault, db_path):
    for folder in ("A", "B"):
        vault.write(f"{folder}/Entwurf.md", f"# Entwurf {folder}\n\n{BODY} Fassung {folder} mit eigenem Text.\n",
                    dedent=False)
    vault.write("Index.md", "# Index\n\n[[A/Entwurf]] und [[Entwurf]].\n", dedent=False)
    settings = settings_for(db_path, vault)
    index(settings, vault)
    for folder in ("A", "B"):
        os.rename(vault.root / f"{folder}/Entwurf.md", vault.root / f"{folder}/Fertig.md")
    index(settings, vault)
    with Service(settings, audience=Audience.OWNER) as service:
        by_key = {c.payload["target_key"]: c for c in _cards(service)}
    assert by_key["a/entwurf"].payload["renamed_to"]["path"] == "A/Fertig.md"
    assert "renamed_to" not in by_key["entwurf"].payload  # A's or B's: a guess


async def test_the_tuis_retarget_starts_its_note_search_at_the_renamed_note(renamed):
    from textual.widgets import Input, OptionList
    from tui_support import pilot_app, settle

    from mindtui.tui.picker import NoteSearchPicker

    _, service = renamed
    app = pilot_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("tab", "3")
        await settle(pilot)
        for _ in range(len(app.screen.cards)):
            if app.screen.selected().payload["target_key"] == "alte notiz":
                break
            await pilot.press("down")
            await settle(pilot)
        assert app.screen.selected().payload["target_key"] == "alte notiz"
        await pilot.press("r")
        await settle(pilot)
        assert isinstance(app.screen, NoteSearchPicker)
        assert app.screen.query_one("#picker-query", Input).value == "Neue Notiz"
        first = app.screen.query_one("#picker-list", OptionList).get_option_at_index(0)
        assert "(Archiv/Neue Notiz.md)" in str(first.prompt)
