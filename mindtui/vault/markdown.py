"""Parse one note: decode, frontmatter, markdown block structure, masked text, references, tags.

markdown-it-py runs block rules only (headings, fences, code blocks): that is all the
structure chunking and link extraction need, and it is ~3x faster than a full parse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from markdown_it import MarkdownIt

from mindtui.vault import links as linksyntax
from mindtui.vault.front_matter import split_frontmatter
from mindtui.vault.links import LinkRef

BINARY_SNIFF_BYTES = 8192

_INLINE_CODE = re.compile(r"(`+)(?!`)((?:(?!\n[ \t]*\n).)+?)(?<!`)\1(?!`)", re.DOTALL)
_OBSIDIAN_COMMENT = re.compile(r"%%.*?(?:%%|\Z)", re.DOTALL)
_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_INLINE_TAG = re.compile(r"(?:(?<=\s)|(?<=^))#([^\s#.,;:!?()\[\]{}\"'`|*<>=+]+)", re.MULTILINE)


class NotMarkdownError(Exception):
    """The file cannot be read as a note (binary content)."""


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    line: int  # 0-based index into ParsedNote.lines


@dataclass
class ParsedNote:
    metadata: dict
    lines: list[str]  # body lines, comments blanked (content for chunking)
    body_start_line: int  # file line number (0-based) of lines[0]
    headings: list[Heading]
    fences: list[tuple[int, int]]  # [start, end) body line ranges of code blocks
    links: list[LinkRef]
    tags: list[str]
    warnings: list[str] = field(default_factory=list)
    # The frontmatter's lines when YAML could not use them (consent flags are read from them then).
    unreadable_frontmatter: list[str] | None = None


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark")
    md.core.ruler.disable(["inline"])
    return md


_MD = _markdown()


def decode(data: bytes) -> tuple[str, list[str]]:
    """Bytes -> text. Binary content raises; invalid UTF-8 is replaced and reported."""
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        raise NotMarkdownError("binary content (NUL bytes) in a .md file, skipped")
    warnings = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8", errors="replace")
        warnings.append(f"invalid UTF-8 at byte {exc.start}; undecodable bytes replaced with U+FFFD")
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n"), warnings


def _blank(match: re.Match[str]) -> str:
    """Replace a span by spaces, keeping newlines so line numbers stay put."""
    span = match.group(0)
    if "\n" not in span:
        return " " * len(span)
    return "\n".join(" " * len(part) for part in span.split("\n"))


def _structure(body: str) -> tuple[list[Heading], list[tuple[int, int]]]:
    tokens = _MD.parse(body)
    headings: list[Heading] = []
    fences: list[tuple[int, int]] = []
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.map:
            text = tokens[i + 1].content.strip() if i + 1 < len(tokens) else ""
            headings.append(Heading(int(token.tag[1]), text, token.map[0]))
        elif token.type in ("fence", "code_block") and token.map:
            fences.append((token.map[0], token.map[1]))
    return headings, fences


def string_list(value) -> list[str]:
    """Frontmatter lists that may be written as a list or as one comma-separated string."""
    if value is None:
        return []
    items = value if isinstance(value, list) else str(value).split(",")
    return [str(v).strip() for v in items if v is not None and str(v).strip()]


def _masked(content: str, lines: list[str], fences: list[tuple[int, int]]) -> tuple[str, list[str]]:
    """The body (and its lines) for reference extraction: code blocks, inline code, HTML comments
    blanked (a blanked span keeps its length, so columns stay put)."""
    masked = content
    if fences:
        masked_lines = list(lines)
        for start, end in fences:
            for i in range(start, min(end, len(masked_lines))):
                masked_lines[i] = ""
        masked = "\n".join(masked_lines)
    if "`" in masked:
        masked = _INLINE_CODE.sub(_blank, masked)
    if "<!--" in masked:
        masked = _HTML_COMMENT.sub(_blank, masked)
    return masked, lines if masked is content else masked.split("\n")


def reference_lines(text: str) -> tuple[int, list[str]]:
    """(number of lines before the body, the body's lines as references are read from them: code and
    comments blanked, columns as in the file). For editing links where the importer found them."""
    _, body, start_line, _, _ = split_frontmatter(text)
    content = _OBSIDIAN_COMMENT.sub(_blank, body) if "%%" in body else body
    _, fences = _structure(content)
    return start_line, _masked(content, content.split("\n"), fences)[1]


def parse_note(text: str, path: str, relation_for=lambda key: key) -> ParsedNote:
    metadata, body, start_line, fm_lines, warnings = split_frontmatter(text)
    # %%comments%% are not content. (Each regex below needs its literal: skip it when absent.)
    content = _OBSIDIAN_COMMENT.sub(_blank, body) if "%%" in body else body
    headings, fences = _structure(content)
    lines = content.split("\n")
    masked, masked_lines = _masked(content, lines, fences)  # for references: code and comments blanked

    note_dir = path.rpartition("/")[0]
    refs: list[LinkRef] = linksyntax.frontmatter_references(metadata, fm_lines, relation_for)
    in_edge_callout = False
    # A reference needs "[[" or "](" in its line; a line of an [!edge] callout follows a "[!".
    has_refs = "[[" in masked or "](" in masked or "[!" in masked
    for index, masked_line in enumerate(masked_lines if has_refs else ()):
        if "[[" not in masked_line and "](" not in masked_line and not masked_line.lstrip().startswith(">"):
            in_edge_callout = False
            continue
        line_no = start_line + index + 1
        original = lines[index]
        start = linksyntax.CALLOUT_START.match(masked_line)
        if start:
            in_edge_callout = start.group(1).strip().lower() == "edge"
            if in_edge_callout:
                refs.extend(linksyntax.callout_relation_references(start.group(2), original, line_no))
        elif in_edge_callout:
            inside = linksyntax.CALLOUT_LINE.match(masked_line)
            if inside:
                refs.extend(linksyntax.callout_relation_references(inside.group(1), original, line_no))
            else:
                in_edge_callout = False
        refs.extend(linksyntax.rel_line_references(masked_line, original, line_no))
        refs.extend(linksyntax.references_in_line(masked_line, original, line_no, note_dir))

    tags = {t.lstrip("#").lower() for t in string_list(metadata.get("tags", metadata.get("tag")))}
    heading_lines = {h.line for h in headings}
    for index, line_text in enumerate(masked_lines if "#" in masked else ()):
        if "#" in line_text and index not in heading_lines:
            tags.update(t.lower() for t in _INLINE_TAG.findall(line_text) if not t.isdigit())
    return ParsedNote(
        metadata=metadata, lines=lines, body_start_line=start_line, headings=headings,
        fences=fences, links=refs, tags=sorted(t for t in tags if t), warnings=warnings,
        # split_frontmatter empties the metadata of frontmatter it could not use (and says why)
        unreadable_frontmatter=fm_lines if warnings and not metadata else None,
    )
