"""Link resolution the way Obsidian does it, and never a guess."""

from __future__ import annotations

import pytest

from mindtui.vault.resolve import NameIndex


@pytest.fixture
def names() -> NameIndex:
    index = NameIndex()
    index.add_note("zk", "Konzepte/Zettelkasten.md", ["ZK", "Zettel-Kasten"])
    index.add_note("bm25", "Konzepte/BM25.md", [])
    index.add_note("n1", "Projekte/Notizen.md", [])
    index.add_note("n2", "Inbox/Notizen.md", [])
    index.add_note("deep", "A/B/C/Tief.md", [])
    index.add_note("src", "Quellen/Artikel/Quelle.md", ["Gemeinsam"])
    index.add_note("other", "Quellen/Andere.md", ["Gemeinsam"])
    index.add_outside("Templates/Vorlage.md", "excluded by pattern 'Templates/**'")
    index.add_attachment("Anhänge/bild.png")
    return index


@pytest.mark.parametrize(
    "target, expected",
    [
        ("Konzepte/Zettelkasten", "zk"),        # exact vault path
        ("Konzepte/Zettelkasten.md", "zk"),     # with extension
        ("zettelkasten", "zk"),                 # unique file name, any case
        ("B/C/Tief", "deep"),                   # path suffix
        ("Artikel/Quelle", "src"),
        ("../Konzepte/BM25", "bm25"),          # relative to the linking note's folder
    ],
)
def test_resolves(names, target, expected):
    found = names.resolve(target, "x", "Projekte/Quelle.md")
    assert (found.status, found.note_id) == ("resolved", expected)


def test_ambiguous_file_name_is_not_guessed(names):
    found = names.resolve("Notizen", "x", "Konzepte/X.md")
    assert found.status == "ambiguous" and found.note_id is None
    assert "Inbox/Notizen.md" in found.detail and "Projekte/Notizen.md" in found.detail
    # a path makes it unique again
    assert names.resolve("Projekte/Notizen", "x", "Konzepte/X.md").note_id == "n1"


@pytest.mark.parametrize("alias", ["ZK", "zettel-kasten", "Gemeinsam"])
def test_an_alias_does_not_resolve_a_link(names, alias):
    """Obsidian resolves links by path and file name only; a link that names an alias is
    unresolved there, and says whose alias it is here (curation offers [[Target|alias]])."""
    found = names.resolve(alias, "x", "X.md")
    assert (found.status, found.note_id) == ("missing", None)
    assert "alias of" in found.detail
    assert names.alias_owners(alias) == (["other", "src"] if alias == "Gemeinsam" else ["zk"])


def test_missing_and_out_of_corpus_and_attachments(names):
    assert names.resolve("Gibt es nicht", "x", "X.md").status == "missing"
    outside = names.resolve("Vorlage", "x", "X.md")
    assert outside.status == "out_of_corpus" and "Templates/**" in outside.detail
    assert names.resolve("bild.png", "x", "X.md").status == "attachment"
    assert names.resolve("Anhänge/bild.png", "x", "X.md").status == "attachment"
    missing = names.resolve("fehlt.pdf", "x", "X.md")
    assert missing.status == "missing" and "attachment" in missing.detail


def test_self_links(names):
    assert names.resolve("", "zk", "Konzepte/Zettelkasten.md").status == "self"
    assert names.resolve("Zettelkasten", "zk", "Konzepte/Zettelkasten.md").status == "self"
