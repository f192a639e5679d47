"""Anchor text: the lines in which other notes link to a note count as a full-text row of it."""

from __future__ import annotations

import pytest

from mindtui.audience import Audience
from mindtui.config import load_settings
from mindtui.search.engine import SearchEngine, SearchOptions
from mindtui.store import open_database
from mindtui.store.visibility import restrict
from mindtui.vault.links import anchor_text

from conftest import imported, run_import
from conftest import result_paths as paths

FTS = SearchOptions(mode="fts", log=False, expand=False)


def test_anchor_text_reads_links_as_shown_and_stems():
    lines = [("Mit der [[Seitenvorschau|Vorschau]] beim Hovern", "Seitenvorschau"),
             ("Siehe [[Ordner/Interne Links#Blöcke]].", "Ordner/Interne Links#Blöcke"),
             ("Mit der [[Seitenvorschau|Vorschau]] beim Hovern", "Seitenvorschau")]
    assert anchor_text(lines, "de") == "mit der vorschau beim hov sieh intern link block"


def test_anchor_text_keeps_only_the_link_to_its_note_from_a_line_of_links():
    line = "Alles zum Backen: [[Kuchen]], [[Brot|Brote]] und [[Hefe]]"
    assert anchor_text([(line, "Brot")], "de") == "all zum back brot und"
    assert anchor_text([(line, "Kuchen")], "de") == "all zum back kuch und"


@pytest.fixture
def linked_vault(vault):
    vault.write("Seitenvorschau.md", "Eine integrierte Erweiterung für Links.\n")
    vault.write("Bedienung.md", "Fährt die Maus über einen Verweis, blendet die [[Seitenvorschau|Vorschau]] "
                                "den Inhalt ein.\n")
    vault.write("Geheim.md", "---\nprivate: true\n---\nDas Zauberwort steht in [[Seitenvorschau]].\n")
    return vault


def anchor_rows(conn) -> tuple[int, int]:
    (anchors,) = conn.execute("SELECT count(*) FROM note_anchors").fetchone()
    (rows,) = conn.execute("SELECT count(*) FROM chunks_fts WHERE rowid < 0").fetchone()
    return anchors, rows


def test_a_note_is_found_by_the_words_other_notes_link_to_it_with(linked_vault, db_path):
    with imported(db_path, linked_vault.root) as conn:
        response = SearchEngine(conn, load_settings()).search("Maus blendet", FTS)
        assert set(paths(response)) == {"Bedienung.md", "Seitenvorschau.md"}
        found = next(r for r in response.results if r.path == "Seitenvorschau.md")
        assert found.explain["fts"]["matched"] == "anchor text"
        assert found.snippet.startswith("Eine integrierte Erweiterung")  # its own text is shown
        off = load_settings().with_values({"search": {"anchor_text": False}})
        assert paths(SearchEngine(conn, off).search("Maus blendet", FTS)) == ["Bedienung.md"]
        # A private note's words never describe another note (an agent could find it by them).
        assert paths(SearchEngine(conn, load_settings()).search("Zauberwort", FTS)) == ["Geheim.md"]
        assert anchor_rows(conn) == (1, 1)


def test_anchor_rows_follow_the_linking_notes(linked_vault, db_path):
    run_import(db_path, linked_vault.root)
    linked_vault.write("Bedienung.md", "Fährt die Maus über einen Verweis, passiert nichts.\n")
    with imported(db_path, linked_vault.root) as conn:
        assert paths(SearchEngine(conn, load_settings()).search("blendet", FTS)) == []
        assert anchor_rows(conn) == (0, 0)
    linked_vault.write("Bedienung.md", "Die [[Seitenvorschau]] zeigt Ziele beim Überfahren.\n")
    linked_vault.remove("Seitenvorschau.md")
    linked_vault.write("Seitenvorschau.md", "Neu geschrieben.\n")
    with imported(db_path, linked_vault.root) as conn:
        assert set(paths(SearchEngine(conn, load_settings()).search("Überfahren", FTS))) == {
            "Bedienung.md", "Seitenvorschau.md"}
        assert anchor_rows(conn) == (1, 1)
    linked_vault.remove("Seitenvorschau.md")
    with imported(db_path, linked_vault.root) as conn:
        assert anchor_rows(conn) == (0, 0)  # the target's anchor row went with it


def test_an_agent_never_reaches_a_hidden_note_through_its_anchor_row(linked_vault, db_path):
    linked_vault.write("Seitenvorschau.md", "---\nprivate: true\n---\nEine integrierte Erweiterung.\n")
    run_import(db_path, linked_vault.root)
    conn = open_database(db_path, readonly=True)
    try:
        restrict(conn, Audience.AGENT)
        assert paths(SearchEngine(conn, load_settings()).search("Maus blendet", FTS)) == ["Bedienung.md"]
    finally:
        conn.close()


def test_a_folder_made_private_since_the_import_lends_an_agent_no_words(linked_vault, db_path):
    """The rows are built from the flags stored at import; the reader's own private_paths apply
    at once, so the anchor row of a note whose lender is now private is left out for an agent."""
    run_import(db_path, linked_vault.root)
    owner = open_database(db_path, readonly=True)
    agent = open_database(db_path, readonly=True)
    unaffected = open_database(db_path, readonly=True)
    try:
        restrict(agent, Audience.AGENT, private_paths=("Bedienung.md",))
        restrict(unaffected, Audience.AGENT, private_paths=("Anderes/**",))
        engine = lambda conn: SearchEngine(conn, load_settings())  # noqa: E731
        assert set(paths(engine(owner).search("Maus blendet", FTS))) == {"Bedienung.md", "Seitenvorschau.md"}
        assert set(paths(engine(unaffected).search("Maus blendet", FTS))) == {"Bedienung.md", "Seitenvorschau.md"}
        assert paths(engine(agent).search("Maus blendet", FTS)) == []
        assert paths(engine(agent).search("integrierte Erweiterung", FTS)) == ["Seitenvorschau.md"]  # its own words
    finally:
        for conn in (owner, agent, unaffected):
            conn.close()


@pytest.mark.parametrize("at_most", [None, 1, 2, 100])
def test_the_match_count_counts_a_note_found_by_its_anchor_text_once(linked_vault, db_path, at_most):
    """"Maus blendet": Bedienung by its own words, Seitenvorschau only by the words it is linked
    with; "Erweiterung Maus": Seitenvorschau by both (counted once). A capped count says
    at_most + 1 past the cap."""
    from mindtui.search.query import parse_query
    from mindtui.store.search_store import fts_note_count

    with imported(db_path, linked_vault.root) as conn:
        for query, notes, words_only in (("Maus blendet", 2, 1), ("Erweiterung Maus", 2, 2), ("Zauberwort", 1, 1)):
            expression = parse_query(query).fts
            expected = notes if at_most is None else min(notes, at_most + 1)
            assert fts_note_count(conn, expression, at_most=at_most) == expected, query
            capped = words_only if at_most is None else min(words_only, at_most + 1)
            assert fts_note_count(conn, expression, anchors=False, at_most=at_most) == capped, query
