"""Parsing one note: every reference syntax, and what is not a reference."""

from __future__ import annotations

import textwrap

import pytest

from mindtui.vault.markdown import NotMarkdownError, decode, parse_note, split_frontmatter


def parse(text: str, path: str = "Ordner/Notiz.md"):
    return parse_note(textwrap.dedent(text).lstrip("\n"), path, lambda key: {"related": "related_to"}.get(key, key))


def targets(note, signal: str | None = None) -> list[tuple[str, str]]:
    return [(l.target_path, l.subpath) for l in note.links if signal is None or l.signal == signal]


@pytest.mark.parametrize(
    "source, expected",
    [
        ("[[Ziel]]", ("Ziel", "", False)),
        ("[[Ziel|Beschriftung]]", ("Ziel", "", False)),
        ("[[Ziel#Überschrift]]", ("Ziel", "Überschrift", False)),
        ("[[Ziel#Überschrift|Text]]", ("Ziel", "Überschrift", False)),
        ("[[Ziel#^block-1]]", ("Ziel", "^block-1", False)),
        ("![[Ziel]]", ("Ziel", "", True)),
        ("![[Ziel#Abschnitt]]", ("Ziel", "Abschnitt", True)),
        ("[[Ordner/Unterordner/Ziel]]", ("Ordner/Unterordner/Ziel", "", False)),
        ("[[Ziel.md]]", ("Ziel.md", "", False)),
        ("| a | [[Ziel\\|Text]] |", ("Ziel", "", False)),
        ("[[ Ziel ]]", ("Ziel", "", False)),
    ],
)
def test_wikilink_variants(source, expected):
    note = parse(f"Text {source} Ende\n")
    assert len(note.links) == 1
    link = note.links[0]
    assert (link.target_path, link.subpath, link.is_embed) == expected
    assert (link.relation, link.signal, link.rule_id) == ("links_to", "wikilink", "wikilink")
    assert link.line == 1


def test_same_note_heading_link_has_empty_target():
    note = parse("Siehe [[#Abschnitt]].\n")
    assert targets(note) == [("", "Abschnitt")]


def test_links_in_code_fences_spans_and_comments_are_not_links():
    note = parse(
        """
        Echt: [[Eins]]
        Code: `[[Keiner]]` und ``[[AuchKeiner]]``
        ```markdown
        [[ImFence]]
        ```
            [[EingerücktCode]]

        %% Kommentar [[ImKommentar]] %%
        <!-- [[ImHtmlKommentar]] -->
        %% mehrzeilig
        [[AuchImKommentar]]
        %%
        Echt: [[Zwei]]
        """
    )
    assert targets(note) == [("Eins", ""), ("Zwei", "")]


def test_comment_is_not_content_but_code_is():
    note = parse("Vorher %%geheim%% nachher\n```\ncode bleibt\n```\n")
    body = "\n".join(note.lines)
    assert "geheim" not in body and "Vorher" in body and "nachher" in body
    assert "code bleibt" in body


def test_an_html_comment_is_not_content_unless_it_is_never_closed():
    note = parse("# Titel <!-- alt -->\nVorher <!-- versteckt -->nachher\n<!--\n### Sponsor this author\n-->\n"
                 "```html\n<!-- im Code -->\n```\nText mit <!-- offen und was folgt\n")
    body = "\n".join(note.lines)
    assert "versteckt" not in body and "Sponsor" not in body and "alt" not in body
    assert "Vorher" in body and "nachher" in body and "im Code" in body  # code is code
    assert "offen und was folgt" in body  # never closed: text, nothing lost
    assert [h.text for h in note.headings] == ["Titel"]


def test_markdown_links_to_notes_are_links_and_urls_are_not():
    note = parse("[a](Andere%20Notiz.md) [b](<Mit Leer.md>) [c](https://example.org/x.md) [d](#anker) [e](../Oben.md)\n")
    # A bare name is resolved like a wikilink (vault-wide); ../ names the note's folder.
    assert targets(note) == [("Andere Notiz.md", ""), ("Mit Leer.md", ""), ("Oben.md", "")]
    assert {l.rule_id for l in note.links} == {"markdown_link"}


def test_inline_rel_lines_make_typed_references():
    note = parse("rel: similar_to [[A]] [[B]]\n- rel: supports [[C]]\nkein rel: x [[D]]\n")
    typed = [(l.relation, l.target_path, l.rule_id, l.confidence) for l in note.links if l.signal == "inline"]
    assert typed == [
        ("similar_to", "A", "inline:rel", 0.95),
        ("similar_to", "B", "inline:rel", 0.95),
        ("supports", "C", "inline:rel", 0.95),
    ]
    # the links in a rel line are also plain links, as Obsidian's graph shows them
    assert [t for t, _ in targets(note, "wikilink")] == ["A", "B", "C", "D"]


def test_edge_callouts_with_several_relation_lines():
    note = parse(
        """
        > [!edge] related_to: [[A]] [[B]]
        > supports: [[C]]
        > Freitext ohne Relation [[D]]

        > [!tip] Tipp: [[E]]
        > supports: [[F]]
        """
    )
    typed = [(l.relation, l.target_path) for l in note.links if l.signal == "callout"]
    assert typed == [("related_to", "A"), ("related_to", "B"), ("supports", "C")]
    assert all(l.rule_id == "callout:edge" for l in note.links if l.signal == "callout")
    assert [t for t, _ in targets(note, "wikilink")] == ["A", "B", "C", "D", "E", "F"]


def test_frontmatter_link_lists_and_single_values():
    note = parse(
        """
        ---
        related: ["[[A]]", "[[B|Bee]]"]
        up: "[[Thema]]"
        aliases: ["[[NichtAlsLink]]"]
        tags: [x]
        ---
        Text
        """
    )
    fm = [(l.relation, l.target_path, l.rule_id, l.line) for l in note.links if l.signal == "frontmatter"]
    assert fm == [
        ("related_to", "A", "frontmatter:related", 2),
        ("related_to", "B", "frontmatter:related", 2),
        ("up", "Thema", "frontmatter:up", 3),
    ]


def test_evidence_is_the_original_line():
    note = parse("Wir nutzen `code` und [[Ziel]] hier.\n")
    assert note.links[0].evidence == "Wir nutzen `code` und [[Ziel]] hier."


def test_tags_from_frontmatter_and_body_not_headings_or_code():
    note = parse(
        """
        ---
        tags: [Projekt, "#pkm"]
        ---
        # Überschrift
        Text mit #idee und #Lernen/Tiefe, aber nicht `#code` oder #123 oder url#frag.
        """
    )
    assert note.tags == ["idee", "lernen/tiefe", "pkm", "projekt"]


def test_headings_and_line_numbers_account_for_frontmatter():
    note = parse("---\na: 1\n---\n# Eins\nText\n## Zwei\n```\n# kein Heading\n```\n")
    assert [(h.level, h.text) for h in note.headings] == [(1, "Eins"), (2, "Zwei")]
    assert note.lines[note.headings[0].line] == "# Eins"
    assert note.body_start_line + note.headings[0].line + 1 == 4  # '# Eins' is the file's 4th line


def test_malformed_yaml_is_a_warning_and_body_survives():
    meta, body, start, _, warnings = split_frontmatter("---\ntitle: [unclosed\n---\nKörper [[Ziel]]\n")
    assert meta == {} and "Körper" in body
    assert start + body.split("\n").index("Körper [[Ziel]]") + 1 == 4
    assert warnings and "malformed YAML" in warnings[0]
    note = parse("---\ntitle: [unclosed\n---\nKörper [[Ziel]]\n")
    assert targets(note) == [("Ziel", "")] and note.warnings


def test_frontmatter_that_is_not_a_mapping_is_ignored():
    note = parse("---\n- a\n- b\n---\nText\n")
    assert note.metadata == {} and "not a mapping" in note.warnings[0]


def test_unclosed_frontmatter_is_body():
    note = parse("---\nnur ein Trenner\n")
    assert note.metadata == {} and any("nur ein Trenner" in l for l in note.lines)


def test_decode_invalid_utf8_and_binary():
    text, warnings = decode("Grüße".encode("utf-8") + b"\xff\xfe kaputt")
    assert "Grüße" in text and "\ufffd" in text and "invalid UTF-8" in warnings[0]
    with pytest.raises(NotMarkdownError):
        decode(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    assert decode("\ufeffBOM\r\nzeile".encode("utf-8"))[0] == "BOM\nzeile"
