"""Parse one note: decode, frontmatter, markdown block structure, masked text, references, tags.

markdown-it-py runs block rules only (headings, fences, code blocks): that is all the
structure chunking and link extraction need, and it is ~3x faster than a full parse. Code
spans come from its inline parser too, run with nothing but the rules that decide where a
code span is (backticks, backslash escapes, autolinks, raw HTML), and only on the blocks that
hold a backtick. Code is found first and `%%comments%%` only in the text outside it, as
Obsidian reads them: a `%%` inside code is code, and a code span never crosses a paragraph
or a list item.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from markdown_it.rules_inline import backtick as _markdown_it_backtick
from markdown_it.token import Token

from mindtui.vault import links as linksyntax
from mindtui.vault.front_matter import split_frontmatter
from mindtui.vault.links import LinkRef

BINARY_SNIFF_BYTES = 8192

_BACKTICK_RUN = re.compile(r"`+")
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


def _located_backtick(state, silent: bool) -> bool:
    """markdown-it's own code span rule, which also notes where the span lies in the block's text."""
    start, count = state.pos, len(state.tokens)
    if not _markdown_it_backtick(state, silent):
        return False
    if not silent and len(state.tokens) > count and state.tokens[-1].type == "code_inline":
        state.tokens[-1].meta = {"span": (start, state.pos)}
    return True


def _code_span_parser() -> MarkdownIt:
    """The inline rules that decide where a code span starts and ends, nothing else: escapes
    (a backslash-escaped backtick opens nothing), autolinks and raw HTML (they bind tighter
    than code spans), plain text and line breaks."""
    md = MarkdownIt("commonmark")
    md.inline.ruler.enableOnly(["text", "newline", "escape", "backticks", "autolink", "html_inline"])
    md.inline.ruler.at("backticks", _located_backtick)
    md.inline.ruler2.enableOnly([])
    # Plain text runs up to a character one of these rules starts at (by default also every
    # `[`, `-`, `:`, ... of a line full of links, each tried against every rule).
    md.inline.terminator_re = re.compile(r"[`\\\n<]")
    return md


_MD = _markdown()
_CODE_SPANS = _code_span_parser()


def reject_binary(data: bytes) -> None:
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        raise NotMarkdownError("binary content (NUL bytes) in a .md file, skipped")


def decode(data: bytes) -> tuple[str, list[str]]:
    """Bytes -> text. Binary content raises; invalid UTF-8 is replaced and reported."""
    reject_binary(data)
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


def _column(source: str, content: str) -> int:
    """Where a line of a block's inline text starts in its source line: the text is the line's
    tail after the block's markers (list bullet, `>`, indent), the last line without trailing
    spaces, an ATX heading without its closing `#`s."""
    if source.endswith(content):
        return len(source) - len(content)
    stripped = source.rstrip()
    if stripped.endswith(content):
        return len(stripped) - len(content)
    found = source.find(content)
    # Not found: a tab the block's indent cut in half became spaces; the tail still lines up.
    return found if found >= 0 else len(source) - len(content)


def _code_spans(token: Token, lines: list[str]) -> list[tuple[int, int, int]]:
    """(body line, first column, end column) of every code span in one inline block."""
    children: list[Token] = []
    _CODE_SPANS.inline.parse(token.content, _CODE_SPANS, {}, children)
    spans = [child.meta["span"] for child in children if child.type == "code_inline" and child.meta]
    if not spans:
        return []
    parts = token.content.split("\n")
    starts = [0]
    for part in parts[:-1]:
        starts.append(starts[-1] + len(part) + 1)
    cells = []
    columns: dict[int, int] = {}  # part -> its column: found once per line, not once per span on it
    for first, end in spans:
        k = bisect.bisect_right(starts, first) - 1
        while k < len(parts) and starts[k] < end:
            line_no = token.map[0] + k
            if line_no < len(lines):
                if k not in columns:
                    columns[k] = _column(lines[line_no], parts[k])
                column = columns[k]
                lo = max(first, starts[k]) - starts[k] + column
                hi = min(end, starts[k] + len(parts[k])) - starts[k] + column
                cells.append((line_no, max(lo, 0), min(hi, len(lines[line_no]))))
            k += 1
    return cells


def _may_hold_code(text: str) -> bool:
    """A code span opens and closes with backtick runs of one length: without two runs of the same
    length there is none (most prose with a lone ` or a ``` mention), and the parser is not run."""
    lengths = [len(run) for run in _BACKTICK_RUN.findall(text)]
    return len(set(lengths)) < len(lengths)


def _blank_columns(line: str, spans: list[tuple[int, int]]) -> str:
    """The line with each (lo, hi) span of columns blanked, in one pass: a long line may hold
    thousands of code spans, and a copy of the line for each was quadratic (a 2 MB line, 50 s)."""
    pieces, last = [], 0
    for lo, hi in sorted(spans):
        lo = max(lo, last)
        if hi > lo:
            pieces += [line[last:lo], " " * (hi - lo)]
            last = hi
    pieces.append(line[last:])
    return "".join(pieces)


@dataclass
class _Body:
    headings: list[Heading]
    fences: list[tuple[int, int]]
    lines: list[str]  # comments blanked: the content
    masked: str  # code and comments blanked: where references are read
    masked_lines: list[str]


def _read_body(body: str) -> _Body:
    """The body's structure and its two blanked copies. Code (fences, indented blocks, code
    spans) is found first, by markdown-it; `%%comments%%` and HTML comments then only in
    the text outside code (both are no content). A blanked span keeps its length, so lines and
    columns stay put."""
    tokens = _MD.parse(body)
    lines = body.split("\n")
    headings: list[Heading] = []
    fences: list[tuple[int, int]] = []
    code = list(lines)
    spans: dict[int, list[tuple[int, int]]] = {}  # line -> its code spans' columns (a table's cells share one)
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.map:
            text = tokens[i + 1].content.strip() if i + 1 < len(tokens) else ""
            headings.append(Heading(int(token.tag[1]), text, token.map[0]))
        elif token.type in ("fence", "code_block") and token.map:
            fences.append((token.map[0], token.map[1]))
            for line_no in range(token.map[0], min(token.map[1], len(code))):
                code[line_no] = " " * len(code[line_no])
        elif token.type == "inline" and token.map and "`" in token.content and _may_hold_code(token.content):
            for line_no, lo, hi in _code_spans(token, lines):
                spans.setdefault(line_no, []).append((lo, hi))
    for line_no, columns in spans.items():
        code[line_no] = _blank_columns(code[line_no], columns)
    masked = "\n".join(code)
    if "%%" in masked:
        masked, lines, headings = _without_comments(_OBSIDIAN_COMMENT, masked, lines, headings)
    if "<!--" in masked:
        # An HTML comment is no content either: no renderer shows it, Obsidian's reading view
        # neither, and a plugin template's hidden lines ("<!-- ### Sponsor this author -->" in
        # every note of the hub vault) made every note made from it match their words. Only a
        # closed one: an unclosed "<!--" in prose is text (losing the rest of the note would be
        # worse); no link is read after it all the same.
        masked, lines, headings = _without_comments(_HTML_COMMENT, masked, lines, headings, closing="-->")
        masked = _HTML_COMMENT.sub(_blank, masked)
    masked_lines = lines if masked == body else masked.split("\n")
    return _Body(headings, fences, lines, masked, masked_lines)


def _without_comments(pattern: re.Pattern, masked: str, lines: list[str], headings: list[Heading],
                      closing: str | None = None) -> tuple[str, list[str], list[Heading]]:
    """The comments `pattern` finds in `masked` (code already blanked) blanked in both copies, with
    `closing` only those that end with it (the pattern itself runs to the end of the text when a
    comment is not closed: looking for the closed ones alone scanned the rest of the text from
    every opening, quadratic in a file of openings). A heading inside a comment is no heading;
    one with a comment in it shows without it."""
    def counts(found: re.Match) -> bool:
        return closing is None or found.group(0).endswith(closing)

    comments = [(m.start(), m.end()) for m in pattern.finditer(masked) if counts(m)]
    if not comments:
        return masked, lines, headings
    lines = _blank_ranges("\n".join(lines), comments).split("\n")
    headings = [Heading(h.level, pattern.sub(lambda m: "" if counts(m) else m.group(0), h.text).strip(), h.line)
                for h in headings if lines[h.line].strip()]
    return _blank_ranges(masked, comments), lines, headings


def _blank_ranges(text: str, ranges: list[tuple[int, int]]) -> str:
    pieces, last = [], 0
    for start, end in ranges:
        pieces.append(text[last:start])
        span = text[start:end]
        pieces.append("\n".join(" " * len(part) for part in span.split("\n")))
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


def string_list(value) -> list[str]:
    """Frontmatter lists that may be written as a list or as one comma-separated string. A list
    inside the list gives its items (`tags: [[a, b]]`); see `_scalar_text` for the items."""
    if isinstance(value, list):
        items = (string_list(item) if isinstance(item, list) else [_scalar_text(item)] for item in value)
        return [text for texts in items for text in texts if text]
    return [part.strip() for part in _scalar_text(value).split(",") if part.strip()]


def _scalar_text(value) -> str:
    """What YAML read as text, a number or a boolean, as it was written (`true`, not Python's
    `True`); nothing for null or a mapping (whose Python repr is no name)."""
    if value is None or isinstance(value, dict):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value).strip()


def reference_lines(text: str) -> tuple[int, list[str]]:
    """(number of lines before the body, the body's lines as references are read from them: code and
    comments blanked, columns as in the file). For editing links where the importer found them."""
    _, body, start_line, _, _ = split_frontmatter(text)
    return start_line, _read_body(body).masked_lines


def parse_note(text: str, path: str, relation_for=lambda key: key) -> ParsedNote:
    metadata, body, start_line, fm_lines, warnings = split_frontmatter(text)
    read = _read_body(body)
    headings, fences, lines, masked, masked_lines = read.headings, read.fences, read.lines, read.masked, read.masked_lines

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
