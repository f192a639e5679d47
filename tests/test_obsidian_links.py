"""Links as Obsidian reads them: code spans from the CommonMark parser (never across list items or
paragraphs), `%%` comments only outside code, markdown links by name vault-wide, no alias
resolution, URLs never note paths. One case per test, each found on a real vault (obsidian-hub-en)."""

from __future__ import annotations

import textwrap

from conftest import run_import
from curation_support import query
from mindtui.vault.markdown import parse_note, reference_lines


def found(text: str, path: str = "Notes/Page.md") -> list[str]:
    return [link.target_path for link in parse_note(textwrap.dedent(text).lstrip("\n"), path).links]


def test_a_lone_backtick_does_not_swallow_the_next_list_items():
    """`_INLINE_CODE` paired the item's lone ` with the first ` of `code` two items down."""
    assert found("""
        - [[Alpha]] it's a ` tick
        - [[Beta]]
        - [[Gamma]] `code`
        """) == ["Alpha", "Beta", "Gamma"]


def test_a_run_of_backticks_in_prose_opens_no_span():
    """Uncategorized plugins.md: an item that mentions a ``` codeblock swallowed 128 links."""
    assert found("""
        - [[Schedule]]: write a ```schedule codeblock
        - [[Next]]: more `text`
        - [[Last]] `a` and ``b`` and [[After]]
        """) == ["Schedule", "Next", "Last", "After"]


def test_code_spans_are_found_as_commonmark_finds_them():
    assert found("""
        Text ``a ` [[InDouble]]`` [[One]] \\`[[Escaped]]` [[Two]]
        > quote `[[InQuote]]` and [[Three]]
        ## Heading `[[InHeading]]` ##
        1. item `multi
           line [[InSpan]]` [[Four]]

        A paragraph ` that opens

        and [[Five]] in the next ` paragraph
        """) == ["One", "Escaped", "Two", "Three", "Four", "Five"]


def test_a_code_span_keeps_its_columns_for_editing():
    """rewrite.py edits links where the masked lines found them: blanking keeps every column."""
    text = "- a `[[No]]` [[Yes]]\n> b ``[[No]]`` [[Yes]]\n"
    _, lines = reference_lines(text)
    assert lines[:2] == ["- a          [[Yes]]", "> b            [[Yes]]"]


def test_percent_signs_in_code_open_no_comment():
    """Comments were blanked before code was found: `%%` in code hid the rest of the note."""
    note = parse_note("Use `%%` in [[Templater]].\n```\n%% not a comment\n```\n[[After]] %% [[Hidden]] %% [[Shown]]\n",
                      "a.md")
    assert [link.target_path for link in note.links] == ["Templater", "After", "Shown"]
    assert "%% not a comment" in "\n".join(note.lines)  # code is content; the real comment is not
    assert "Hidden" not in "\n".join(note.lines)


def test_a_heading_inside_a_comment_is_no_heading():
    note = parse_note("# Real\n%%\n# Commented out\n[[Hidden]]\n%%\n## Also real %%note%%\n", "a.md")
    assert [(h.level, h.text) for h in note.headings] == [(1, "Real"), (2, "Also real")]
    assert note.links == []


def test_urls_are_never_note_paths():
    """`[x]((https://…))` (a typo in the hub vault) and `[[https://…]]` name no note."""
    assert found("""
        A [guide]((https://github.com/x/y.md) and [[https://example.org/page]].
        [www](www.example.org) and [mail](mailto:a@b.c), but [note](Real%20Note.md).
        """) == ["Real Note.md"]


def test_a_markdown_link_to_a_bare_name_resolves_vault_wide(vault, db_path):
    vault.write("Notes/Page.md", "[x](Zektor) [y](Zektor.md#Bio) [z](./Local.md) [w](../People/Zektor.md)\n")
    vault.write("People/Zektor.md", "# Zektor\n")
    vault.write("Notes/Local.md", "# Local\n")
    run_import(db_path, vault.root)
    assert query(db_path, "SELECT l.target_path, l.resolution, t.path FROM note_links l"
                          " LEFT JOIN notes t ON t.note_id = l.resolved_note_id ORDER BY l.seq") == [
        ("Zektor", "resolved", "People/Zektor.md"), ("Zektor.md", "resolved", "People/Zektor.md"),
        ("Notes/Local.md", "resolved", "Notes/Local.md"), ("People/Zektor.md", "resolved", "People/Zektor.md")]


def test_a_markdown_link_target_keeps_its_balanced_parentheses(vault, db_path):
    # hub: `[Kanban](Kanban%20(SlRvb).md)` was cut at the first ')', a false unresolved-link card.
    assert found("[k](Kanban%20(SlRvb).md) [w](Wiki_(Begriff)#Teil) [u](Ohne) danach)\n") == [
        "Kanban (SlRvb).md", "Wiki_(Begriff)", "Ohne"]
    assert found("[nie](halb(offen) und (zu)\n") == []  # unbalanced: no link, as in CommonMark
    vault.write("Notes/Page.md", "Siehe [Kanban](Kanban%20(SlRvb).md).\n")
    vault.write("CSS Snippets/Kanban (SlRvb).md", "# Kanban\n")
    run_import(db_path, vault.root)
    assert query(db_path, "SELECT l.resolution, t.path FROM note_links l"
                          " LEFT JOIN notes t ON t.note_id = l.resolved_note_id") == [
        ("resolved", "CSS Snippets/Kanban (SlRvb).md")]
