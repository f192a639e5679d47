"""Chunking: headings first, the token budget always holds."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from e5_tokens import real_token_count
from hypothesis import given, settings
from hypothesis import strategies as st

from mindtui.models.embedder import PASSAGE_PREFIX
from mindtui.text.names import passage_text
from mindtui.vault.chunking import chunk_note
from mindtui.vault.markdown import parse_note
from mindtui.text.tokens import content_tokens, estimate_tokens
from mindtui.vault.types import HARD_TOKEN_LIMIT, ChunkProfile

PROFILE = ChunkProfile("test", max_tokens=120, min_tokens=20, split_levels=3)


def chunks_of(text: str, profile: ChunkProfile = PROFILE, title: str = "Titel"):
    return chunk_note(title, parse_note(textwrap.dedent(text).lstrip("\n"), "n.md"), profile)


def paragraph(n_words: int, word: str = "Wissensmanagement") -> str:
    return " ".join([word] * n_words) + "."


def assert_within_the_real_window(chunk, title: str) -> None:
    """What the model reads of a chunk, counted by the real tokenizer (not the estimator under
    test): never more than the chunk's token_count says (plus its prefix), never past 512."""
    embedded = PASSAGE_PREFIX + passage_text(title, chunk.heading_path, chunk.text)
    real = real_token_count(embedded)
    assert real <= chunk.token_count + content_tokens(PASSAGE_PREFIX) and real <= HARD_TOKEN_LIMIT, (real, chunk)


def test_headings_start_chunks_with_their_path():
    chunks = chunks_of(
        f"""
        Einleitung {paragraph(15)}
        # Eins
        {paragraph(15)}
        ## Unter
        {paragraph(15)}
        # Zwei
        {paragraph(15)}
        """
    )
    assert [c.heading_path for c in chunks] == ["", "Eins", "Eins > Unter", "Zwei"]
    assert [c.seq for c in chunks] == [0, 1, 2, 3]
    assert chunks[2].line_start == 4 and "# Eins" not in chunks[1].text


def test_small_sections_are_merged_and_keep_their_heading():
    chunks = chunks_of("# A\nkurz\n# B\nauch kurz\n")
    assert len(chunks) == 1
    assert "kurz" in chunks[0].text and "# B" in chunks[0].text and "auch kurz" in chunks[0].text


def test_deep_headings_below_split_level_stay_inside():
    profile = ChunkProfile("coarse", max_tokens=400, min_tokens=1, split_levels=1)
    chunks = chunks_of(f"# A\n{paragraph(10)}\n### Tief\n{paragraph(10)}\n# B\n{paragraph(10)}\n", profile)
    assert [c.heading_path for c in chunks] == ["A", "B"]
    assert "### Tief" in chunks[0].text


def test_long_section_splits_at_paragraphs_then_sentences_then_words():
    long_paragraph = " ".join(f"Satz {i} über Verknüpfungen." for i in range(200))
    one_word = "Donaudampfschifffahrtsgesellschaft" * 150
    chunks = chunks_of(f"# Lang\n{paragraph(30)}\n\n{paragraph(30)}\n\n{long_paragraph}\n\n{one_word}\n")
    assert len(chunks) > 5
    for chunk in chunks:
        assert chunk.token_count <= PROFILE.max_tokens
        assert estimate_tokens(passage_text("Titel", chunk.heading_path, chunk.text)) == chunk.token_count
        assert_within_the_real_window(chunk, "Titel")
    joined = " ".join(c.text for c in chunks)
    assert "Satz 0 über" in joined and "Satz 199 über" in joined and one_word in "".join(joined.split())


def test_code_fence_is_not_cut_at_blank_lines():
    """A paragraph that nearly fills the budget, then five short blocks: as plain paragraphs the first
    ones are packed onto the paragraph's chunk; inside a code fence the blank lines are no boundary."""
    lines = "\n\n".join(f"a{i} = {i}" for i in range(5))
    profile = ChunkProfile("p", 100, 10, 3)
    plain = chunks_of(f"# Code\n{paragraph(16)}\n\n{lines}\n", profile)
    assert len([c for c in plain if "a0 = 0" in c.text or "a4 = 4" in c.text]) == 2  # split between them
    fenced = chunks_of(f"# Code\n{paragraph(16)}\n\n```python\n{lines}\n```\n", profile)
    holding = [c for c in fenced if "a0 = 0" in c.text or "a4 = 4" in c.text]
    assert len(holding) == 1 and holding[0].text.startswith("```python") and holding[0].text.endswith("a4 = 4\n```")


def test_empty_body_gives_no_chunks():
    assert chunks_of("---\ntitle: nur Frontmatter\n---\n") == []


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=3000), st.integers(40, 500))
def test_no_chunk_ever_exceeds_its_budget(text, max_tokens):
    profile = ChunkProfile("prop", max_tokens=max_tokens, min_tokens=10, split_levels=3)
    for chunk in chunk_note("Ein Titel", parse_note(text, "p.md"), profile):
        assert chunk.token_count <= min(max_tokens, 504)
    # The same text after a first paragraph: never nothing to check.
    chunks = chunk_note("Ein Titel", parse_note("Anfang\n\n" + text, "p.md"), profile)
    assert chunks and chunks[0].text.startswith("Anfang")
    for chunk in chunks:
        assert chunk.token_count <= min(max_tokens, 504)
        assert estimate_tokens(passage_text("Ein Titel", chunk.heading_path, chunk.text)) == chunk.token_count


@pytest.mark.parametrize("title, id_like", [
    ("202311291530", True), ("42175e289496779a-0", True), ("550e8400-e29b-41d4-a716-446655440000", True),
    ("2026-11-08", False), ("Zettelkasten", False), ("deadbeefcafe", False), ("BM25", False),
])
def test_id_like_titles_stay_out_of_the_embedded_passage(title, id_like):
    from mindtui.text.names import is_id_like

    assert is_id_like(title) is id_like
    assert passage_text(title, "Abschnitt", "Text").startswith("Abschnitt" if id_like else f"{title} > Abschnitt")
    assert passage_text(title, "", "Text") == ("Text" if id_like else f"{title}\nText")


def test_a_long_run_of_symbols_and_digits_is_cut_within_the_budget():
    """Found by the property above: a 36-character "word" of digits and colons costs a token per
    character; cutting it at twice the budget in characters (enough for letters) cut nothing."""
    profile = ChunkProfile("prop", max_tokens=40, min_tokens=10, split_levels=3)
    text = "0:" * 18
    chunks = chunk_note("Ein Titel", parse_note(text, "p.md"), profile)
    assert len(chunks) == 2 and "".join(c.text for c in chunks) == text
    assert all(c.token_count <= 40 for c in chunks)
    letters = chunk_note("T", parse_note("x" * 5000, "p.md"), profile)  # letters keep long pieces (four a token)
    assert all(c.token_count <= 40 for c in letters) and letters[0].token_count * 3 < len(letters[0].text)


NATURAL = json.loads((Path(__file__).parent / "data" / "natural_text.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("language", sorted(NATURAL))
def test_the_estimate_never_under_counts_natural_text(language):
    """The estimator's stated bound (mindtui.text.tokens), by the real tokenizer: natural text in
    the vault's languages and others, code, URLs, tables, markdown, emoji and numbers."""
    text = PASSAGE_PREFIX + NATURAL[language]
    assert estimate_tokens(text) >= real_token_count(text)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(sorted(NATURAL.values())), min_size=1, max_size=60),
       st.sampled_from(["\n\n", "\n", " "]), st.integers(40, 500))
def test_chunks_of_natural_text_stay_within_the_real_window(texts, joiner, max_tokens):
    profile = ChunkProfile("natural", max_tokens=max_tokens, min_tokens=10, split_levels=3)
    chunks = chunk_note("Ein Titel", parse_note(joiner.join(texts), "n.md"), profile)
    assert chunks
    for chunk in chunks:
        assert_within_the_real_window(chunk, "Ein Titel")
