"""Huge input costs time in proportion to its size: one long line never holds up an import."""

from __future__ import annotations

import time

from mindtui.text import tokens
from mindtui.vault import chunking, markdown
from mindtui.vault.chunking import chunk_note
from mindtui.vault.links import EVIDENCE_CHARS, evidence_around
from mindtui.vault.markdown import parse_note
from mindtui.vault.types import ChunkProfile


def test_a_long_word_is_cut_without_counting_its_rest_again_and_again(monkeypatch):
    """A 200 KB word is cut into pieces; counting all of the rest after each cut read the word
    ~280 times over (a 1 MB word took 10-20 s)."""
    counted = []

    def counting(text: str) -> int:
        counted.append(len(text))
        return tokens.content_tokens(text)

    monkeypatch.setattr(chunking, "content_tokens", counting)
    for word in ("a" * 200_000, "#" * 200_000, "ab1-" * 50_000):
        counted.clear()
        chunks = chunk_note("t", parse_note(word, "t.md"), ChunkProfile("default"))
        assert "".join(c.text for c in chunks) == word and all(c.token_count <= 380 for c in chunks)
        assert sum(counted) < 20 * len(word)  # a few times over (cut, then halved), not once per cut


def test_a_long_line_of_unclosed_markdown_links_is_read_in_linear_time():
    """32,000 characters of '[a](' took ~15 s (each attempt scanned the rest of the line)."""
    line = "[a](" * 8_000 + " [b](Ziel.md) [[Wiki]]"
    started = time.monotonic()
    note = parse_note(line, "n.md")
    assert time.monotonic() - started < 1.5
    assert [link.target_path for link in note.links] == ["Wiki", "Ziel.md"]


def test_a_text_of_unclosed_html_comments_is_read_in_linear_time():
    """Only closed HTML comments are no content: looking for them from every '<!--' scanned the
    rest of the text each time (a file of 50,000 openings: minutes)."""
    text = "Anfang " + "<!-- " * 50_000 + "Ende"
    started = time.monotonic()
    note = parse_note(text, "n.md")
    assert time.monotonic() - started < 1.5
    assert "Ende" in "\n".join(note.lines)  # never closed: text


def test_a_markdown_link_target_ends_before_a_bracket():
    note = parse_note("[](x[a](b.md) and [see ![img](bild.png)\n", "n.md")
    assert [(link.target_path, link.is_embed) for link in note.links] == [("b.md", False), ("bild.png", True)]


class _LineThatMustNotBeCopied(str):
    """A line whose whole-line copies fail the test (strip copies all of it, for every link)."""

    def strip(self, chars=None):
        raise AssertionError("the whole line was copied")

    lstrip = rstrip = strip


def test_a_links_evidence_copies_only_its_window_of_a_long_line():
    text = "  " + "Wort " * 20_000 + "[[Ziel]]" + " Ende" * 20_000 + "  "
    line = _LineThatMustNotBeCopied(text)
    at = text.index("[[Ziel]]")
    evidence = evidence_around(line, at, at + 8)
    assert evidence.startswith("…") and evidence.endswith("…") and "[[Ziel]]" in evidence
    assert len(evidence) <= EVIDENCE_CHARS + 2
    assert evidence_around(_LineThatMustNotBeCopied("\t kurz [[Ziel]] \t"), 7, 15) == "kurz [[Ziel]]"


def test_a_long_line_of_code_spans_is_read_once_per_line_not_once_per_span(monkeypatch):
    """A 2 MB line holding 100,000 code spans took 50 s: each span searched the line for its
    column and copied the line to blank itself."""
    read = []

    def reading(original):
        def wrapper(line, *args):
            read.append(len(line))
            return original(line, *args)
        return wrapper

    monkeypatch.setattr(markdown, "_column", reading(markdown._column))
    monkeypatch.setattr(markdown, "_blank_columns", reading(markdown._blank_columns))
    line = "`[[Code]]` [[Ziel]] " * 5_000
    note = parse_note(line + "\n\n| `[[A]]` | [[B]] | `[[C]]` |\n|---|---|---|\n", "n.md")
    assert [link.target_path for link in note.links] == ["Ziel"] * 5_000 + ["B"]
    assert sum(read) < 4 * len(line)
