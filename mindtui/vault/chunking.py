"""Split a parsed note into chunks: by headings first, then paragraphs, sentences, words.

Every chunk's embedded text (title, heading path, body; see `passage_text`) stays within
its profile's max_tokens, which itself stays below the model's 512-token window.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mindtui.text.names import passage_text
from mindtui.vault.markdown import Heading, ParsedNote
from mindtui.text.tokens import estimate_tokens
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
            pieces.append(_Piece([h.text for h in stack], heading_md, text, start, max(start, end - 1), True))
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


def _split_text(text: str, budget: int) -> list[str]:
    """Cut an oversized paragraph at sentence ends, then at spaces, then anywhere."""
    parts: list[str] = []
    for unit in _SENTENCE_END.split(text):
        if estimate_tokens(unit) <= budget:
            parts.append(unit)
            continue
        for word in unit.split():
            while estimate_tokens(word) > budget:
                cut = max(1, budget * 2)  # >= 1 character per token: always within budget
                parts.append(word[:cut])
                word = word[cut:]
            parts.append(word)
    return _pack(parts, budget, " ")


def _pack(units: list[str], budget: int, joiner: str) -> list[str]:
    out: list[str] = []
    current: list[str] = []
    for unit in units:
        candidate = joiner.join(current + [unit])
        if current and estimate_tokens(candidate) > budget:
            out.append(joiner.join(current))
            current = [unit]
        else:
            current.append(unit)
    if current:
        out.append(joiner.join(current))
    return out


def _split_piece(piece: _Piece, parsed: ParsedNote, budget: int) -> list[_Piece]:
    out: list[_Piece] = []
    body_first = piece.first + (1 if piece.heading_md else 0)
    current: list[tuple[int, int]] = []

    def flush() -> None:
        if current:
            text = "\n\n".join("\n".join(parsed.lines[a:b + 1]).strip() for a, b in current)
            out.append(_Piece(piece.path, piece.heading_md, text, current[0][0], current[-1][1], False))
            current.clear()

    for a, b in _blocks(parsed.lines, body_first, piece.last, parsed.fences):
        block_text = "\n".join(parsed.lines[a:b + 1]).strip()
        if estimate_tokens(block_text) > budget:
            flush()
            out.extend(_Piece(piece.path, piece.heading_md, t, a, b, False) for t in _split_text(block_text, budget))
            continue
        joined = "\n\n".join(["\n".join(parsed.lines[x:y + 1]).strip() for x, y in current] + [block_text])
        if current and estimate_tokens(joined) > budget:
            flush()
        current.append((a, b))
    flush()
    return out


def chunk_note(title: str, parsed: ParsedNote, profile: ChunkProfile) -> list[Chunk]:
    max_tokens = min(profile.max_tokens, HARD_TOKEN_LIMIT - PREFIX_RESERVE)
    pieces: list[_Piece] = []
    for section in _sections(parsed, profile.split_levels):
        overhead = estimate_tokens(passage_text(title, " > ".join(section.path), "")) + 1
        budget = max(16, max_tokens - overhead)
        if estimate_tokens(section.text) <= budget:
            pieces.append(section)
        else:
            pieces.extend(_split_piece(section, parsed, budget))

    merged: list[_Piece] = []
    for piece in pieces:
        prev = merged[-1] if merged else None
        if prev is not None and prev.whole_section and piece.whole_section:
            text = "\n\n".join(t for t in (prev.text, piece.heading_md, piece.text) if t)
            small = estimate_tokens(prev.text) < profile.min_tokens or estimate_tokens(piece.text) < profile.min_tokens
            if small and estimate_tokens(passage_text(title, " > ".join(prev.path), text)) <= max_tokens:
                merged[-1] = _Piece(prev.path, prev.heading_md, text, prev.first, piece.last, True)
                continue
        merged.append(piece)

    chunks: list[Chunk] = []
    for piece in merged:
        if not piece.text.strip() and not piece.heading_md:
            continue
        path = " > ".join(piece.path)
        text = piece.text if piece.text.strip() else piece.heading_md
        tokens = estimate_tokens(passage_text(title, path, text))
        offset = parsed.body_start_line + 1
        chunks.append(Chunk(len(chunks), path, text, tokens, piece.first + offset, piece.last + offset))
    return chunks
