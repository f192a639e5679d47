"""Split a parsed note into chunks: by headings first, then paragraphs, sentences, words.

Every chunk's embedded text (title, heading path, body; see `passage_text`) stays within
its profile's max_tokens, which itself stays below the model's 512-token window.

Token counts are estimated once per text: the estimate is additive over texts joined by
whitespace (see `mindtui.text.tokens`), so a piece carries `tokens` (its content_tokens) and
the count of a join, or of a passage (context line + "\n" + body), is a sum.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mindtui.text.names import passage_text
from mindtui.vault.markdown import Heading, ParsedNote
from mindtui.text.tokens import SPECIAL_TOKENS, content_tokens
from mindtui.vault.types import HARD_TOKEN_LIMIT, ChunkProfile

# Room for the embedder's "passage: " prefix and rounding.
PREFIX_RESERVE = 8
_SENTENCE_END = re.compile(r"(?<=[.!?…:;])\s+")


@dataclass(frozen=True)
class Chunk:
    seq: int
    heading_path: str
    text: str
    token_count: int
    line_start: int  # 1-based file lines, inclusive
    line_end: int


@dataclass
class _Piece:
    path: list[str]
    heading_md: str  # the section's own heading as markdown ('' for the preamble)
    text: str
    first: int  # body line indexes, inclusive
    last: int
    whole_section: bool
    tokens: int  # content_tokens(text)


def _sections(parsed: ParsedNote, split_levels: int) -> list[_Piece]:
    bounds = [h for h in parsed.headings if h.level <= split_levels]
    stack: list[Heading] = []
    pieces: list[_Piece] = []
    starts = [(None, 0)] + [(h, h.line) for h in bounds]
    for index, (heading, start) in enumerate(starts):
        end = starts[index + 1][1] if index + 1 < len(starts) else len(parsed.lines)
        if heading is not None:
            while stack and stack[-1].level >= heading.level:
                stack.pop()
            stack.append(heading)
            body_first = start + 1
            heading_md = "#" * heading.level + " " + heading.text
        else:
            body_first = 0
            heading_md = ""
        text = "\n".join(parsed.lines[body_first:end]).strip()
        if text or heading is not None:
            pieces.append(_Piece([h.text for h in stack], heading_md, text, start, max(start, end - 1), True,
                                 content_tokens(text)))
    return pieces


def _blocks(lines: list[str], first: int, last: int, fences: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Paragraph ranges [a, b] within [first, last]; a code block is never cut."""
    inside = {i for a, b in fences for i in range(a, b)}
    blocks: list[tuple[int, int]] = []
    start = None
    for i in range(first, last + 1):
        blank = not lines[i].strip() and i not in inside
        if blank:
            if start is not None:
                blocks.append((start, i - 1))
                start = None
        elif start is None:
            start = i
    if start is not None:
        blocks.append((start, last))
    return blocks


def _split_text(text: str, budget: int) -> list[tuple[str, int]]:
    """Cut an oversized paragraph at sentence ends, then at spaces, then anywhere.
    -> [(text, content_tokens(text))]"""
    parts: list[tuple[str, int]] = []
    limit = budget - SPECIAL_TOKENS  # estimate_tokens(t) <= budget  <=>  content_tokens(t) <= limit
    for unit in _SENTENCE_END.split(text):
        tokens = content_tokens(unit)
        if tokens <= limit:
            parts.append((unit, tokens))
            continue
        for word in unit.split():
            tokens = content_tokens(word)
            start = 0
            while tokens > limit:
                # Latin letters cost a token per four, so twice the budget in characters usually
                # fits; digits and symbols cost up to one per character, and then `limit`
                # characters do; other letters may cost more (halve until it fits: one character
                # costs at most MAX_CHAR_TOKENS + 1, below any budget).
                piece = word[start:start + budget * 2]
                count = content_tokens(piece)
                if count > limit:
                    cut = max(1, limit)
                    while cut > 1 and content_tokens(word[start:start + cut]) > limit:
                        cut //= 2
                    piece = word[start:start + cut]
                    count = content_tokens(piece)
                parts.append((piece, count))
                start += len(piece)
                # Counting the whole rest after every cut made a 1 MB word take 10-20 s. A word costs
                # at least a token per four characters, so a rest longer than this is over the limit.
                rest = len(word) - start
                tokens = limit + 1 if rest > 4 * (limit + 1) else content_tokens(word[start:])
            if start < len(word):
                parts.append((word[start:], tokens))
    return _pack(parts, budget, " ")


def _pack(units: list[tuple[str, int]], budget: int, joiner: str) -> list[tuple[str, int]]:
    """Greedy packing of (text, content_tokens) units; `joiner` is whitespace, so counts add up."""
    limit = budget - SPECIAL_TOKENS
    out: list[tuple[str, int]] = []
    current: list[str] = []
    total = 0
    for unit, tokens in units:
        if current and total + tokens > limit:
            out.append((joiner.join(current), total))
            current, total = [unit], tokens
        else:
            current.append(unit)
            total += tokens
    if current:
        out.append((joiner.join(current), total))
    return out


def _split_piece(piece: _Piece, parsed: ParsedNote, budget: int) -> list[_Piece]:
    out: list[_Piece] = []
    body_first = piece.first + (1 if piece.heading_md else 0)
    limit = budget - SPECIAL_TOKENS
    current: list[tuple[int, int, str]] = []  # (first line, last line, stripped text) of each block
    total = 0

    def flush() -> None:
        nonlocal total
        if current:
            text = "\n\n".join(t for _, _, t in current)
            out.append(_Piece(piece.path, piece.heading_md, text, current[0][0], current[-1][1], False, total))
            current.clear()
            total = 0

    for a, b in _blocks(parsed.lines, body_first, piece.last, parsed.fences):
        block_text = "\n".join(parsed.lines[a:b + 1]).strip()
        tokens = content_tokens(block_text)
        if tokens > limit:
            flush()
            out.extend(_Piece(piece.path, piece.heading_md, t, a, b, False, n) for t, n in _split_text(block_text, budget))
            continue
        if current and total + tokens > limit:
            flush()
        current.append((a, b, block_text))
        total += tokens
    flush()
    return out


def chunk_note(title: str, parsed: ParsedNote, profile: ChunkProfile) -> list[Chunk]:
    max_tokens = min(profile.max_tokens, HARD_TOKEN_LIMIT - PREFIX_RESERVE)
    contexts: dict[str, int] = {}

    def context_tokens(path: str) -> int:
        """content_tokens of the passage's context line: passage_text(title, path, text) counts
        SPECIAL_TOKENS + context_tokens(path) + content_tokens(text)."""
        if path not in contexts:
            contexts[path] = content_tokens(passage_text(title, path, ""))
        return contexts[path]

    pieces: list[_Piece] = []
    for section in _sections(parsed, profile.split_levels):
        overhead = SPECIAL_TOKENS + context_tokens(" > ".join(section.path)) + 1
        budget = max(16, max_tokens - overhead)
        if SPECIAL_TOKENS + section.tokens <= budget:
            pieces.append(section)
        else:
            pieces.extend(_split_piece(section, parsed, budget))

    min_tokens = profile.min_tokens - SPECIAL_TOKENS  # estimate_tokens(t) < min  <=>  content_tokens(t) < this
    merged: list[_Piece] = []
    for piece in pieces:
        prev = merged[-1] if merged else None
        if prev is not None and prev.whole_section and piece.whole_section:
            small = prev.tokens < min_tokens or piece.tokens < min_tokens
            if small:
                tokens = prev.tokens + content_tokens(piece.heading_md) + piece.tokens
                if SPECIAL_TOKENS + context_tokens(" > ".join(prev.path)) + tokens <= max_tokens:
                    text = "\n\n".join(t for t in (prev.text, piece.heading_md, piece.text) if t)
                    merged[-1] = _Piece(prev.path, prev.heading_md, text, prev.first, piece.last, True, tokens)
                    continue
        merged.append(piece)

    chunks: list[Chunk] = []
    for piece in merged:
        if not piece.text.strip() and not piece.heading_md:
            continue
        path = " > ".join(piece.path)
        if piece.text.strip():
            text, tokens = piece.text, piece.tokens
        else:
            text, tokens = piece.heading_md, content_tokens(piece.heading_md)
        tokens = SPECIAL_TOKENS + context_tokens(path) + tokens  # == estimate_tokens(passage_text(title, path, text))
        offset = parsed.body_start_line + 1
        chunks.append(Chunk(len(chunks), path, text, tokens, piece.first + offset, piece.last + offset))
    return chunks
