"""Obsidian markdown made readable in a terminal markdown view (pure text, no Textual).

The note view renders CommonMark; Obsidian's own syntax would show as noise there:
frontmatter, `> [!note] Title` callouts, `[[wikilinks|labels]]`, `![[embeds]]`, `%%comments%%`
and `==highlights==`. Each is turned into plain markdown that says the same thing.
"""

from __future__ import annotations

import re
from typing import Iterator
from urllib.parse import quote, unquote

WIKILINK_SCHEME = "note:"
_FRONTMATTER = re.compile(r"\A---[ \t]*\n(?P<block>.*?)\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_CALLOUT = re.compile(r"^(?P<quote>(?:>\s*)+)\[!(?P<kind>[^\]]+)\](?P<fold>[+-]?)\s*(?P<title>.*)$")
_WIKILINK = re.compile(r"(?P<embed>!?)\[\[(?P<target>[^\]|#^]*)(?P<sub>[#^][^\]|]*)?(?:\|(?P<label>[^\]]*))?\]\]")
_COMMENT = re.compile(r"%%.*?%%", re.DOTALL)
_HIGHLIGHT = re.compile(r"==(?=\S)(.+?)(?<=\S)==")
_FENCE = re.compile(r"^\s*(```|~~~)")
_LINE = re.compile(r"[^\n]*\n|[^\n]+")  # a line with its end, as str.splitlines(keepends=True) on \n


def strip_frontmatter(text: str) -> str:
    return _FRONTMATTER.sub("", text, count=1)


def link_href(target: str) -> str:
    return WIKILINK_SCHEME + quote(target, safe="")


def href_target(href: str) -> str | None:
    """The note a rendered wikilink points to, or None for an ordinary URL."""
    return unquote(href[len(WIKILINK_SCHEME):]) if href.startswith(WIKILINK_SCHEME) else None


def _link(match: re.Match) -> str:
    target = match.group("target").strip()
    sub = (match.group("sub") or "").strip()
    heading = " › ".join(part for part in sub.replace("^", "#").split("#") if part.strip())
    label = (match.group("label") or "").strip() or (f"{target} › {heading}" if target and heading
                                                     else target or heading)
    label = label.replace("[", "(").replace("]", ")")
    if match.group("embed"):
        return f"⧉ *{label}*"
    if not target:  # a link to a heading of this note
        return f"*{label}*"
    return f"[{label}]({link_href(target)})"


def _label(match: re.Match) -> str:
    """A wikilink as the words it shows (a frontmatter value is plain text)."""
    return (match.group("label") or "").strip() or match.group("target").strip()


def _inline(line: str) -> str:
    return _HIGHLIGHT.sub(r"**\1**", _WIKILINK.sub(_link, line))


def readable(text: str, frontmatter: bool = True) -> str:
    """The note's body as CommonMark: frontmatter dropped, callouts titled, links followable.
    frontmatter=False: a part of a note after its start (a page), where `---` is a rule."""
    body = _COMMENT.sub("", strip_frontmatter(text) if frontmatter else text)
    out: list[str] = []
    fenced = False
    for line in body.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            out.append(line)
            continue
        if fenced:
            out.append(line)
            continue
        callout = _CALLOUT.match(line)
        if callout:
            kind = callout.group("kind").strip()
            title = _inline(callout.group("title").strip())
            heading = kind.upper() + (f" · {title}" if title else "")
            out.append(f"{callout.group('quote')}**{heading}**")
            continue
        out.append(_inline(line))
    return "\n".join(out).strip("\n") + "\n"


def wikilinks(text: str) -> list[tuple[str, str]]:
    """(target, label) of every non-embed wikilink in document order, each target once."""
    seen: set[str] = set()
    found = []
    for match in _WIKILINK.finditer(_COMMENT.sub("", strip_frontmatter(text))):
        target = match.group("target").strip()
        if match.group("embed") or not target or target.lower() in seen:
            continue
        seen.add(target.lower())
        found.append((target, (match.group("label") or "").strip() or target))
    return found


def frontmatter_rows(text: str) -> list[tuple[str, str]]:
    """The frontmatter's keys and values as text (lists joined, nested values as YAML flow,
    wikilinks as their labels);
    a block that is not valid YAML: each of its lines as it is."""
    import yaml

    match = _FRONTMATTER.match(text)
    if not match:
        return []
    block = match.group("block")
    try:
        data = yaml.safe_load(block)
    except yaml.YAMLError:
        data = None
    if not isinstance(data, dict):
        return [("", line) for line in block.splitlines() if line.strip()]

    def shown(value) -> str:
        if isinstance(value, list):
            return ", ".join(shown(v) for v in value if v is not None)
        if isinstance(value, dict):
            return yaml.safe_dump(value, default_flow_style=True, allow_unicode=True).strip()
        return "" if value is None else _WIKILINK.sub(_label, str(value))

    return [(str(key), shown(value)) for key, value in data.items()]


_TOP_LEVEL_ITEM = re.compile(r"^(?:[-*+]|\d{1,9}[.)])[ \t]")


def split_pages(markdown: str, page_chars: int) -> list[str]:
    """CommonMark cut into pages of about page_chars (see iter_pages)."""
    return list(iter_pages(markdown, page_chars))


def iter_pages(markdown: str, page_chars: int) -> Iterator[str]:
    """CommonMark cut into pages of about page_chars, each rendering as it would inside the whole:
    cuts fall only before a top-level block that follows a blank line, or before a top-level list
    item (a long list becomes several lists, which look the same), never inside a fence or a
    %%comment%%. Works on Obsidian markdown as well as on CommonMark. One page at a time, as
    they are asked for: the first screen of a 5 MB note does not wait for the whole to be cut."""
    page: list[str] = []
    size = 0
    fenced = commented = False
    previous = ""
    for match in _LINE.finditer(markdown):
        line = match.group()
        if size >= page_chars and not fenced and not commented and line.strip() and not line[0].isspace() and (
                not previous.strip() or (_TOP_LEVEL_ITEM.match(line) and _TOP_LEVEL_ITEM.match(previous))):
            yield "".join(page)
            page, size = [], 0
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and line.count("%%") % 2:
            commented = not commented
        page.append(line)
        size += len(line)
        previous = line
    if page:
        yield "".join(page)


class NotePages:
    """A long note's pages, cut from its text as far as they are asked for (page(n)): the worker
    cuts the first few, the view the rest while it renders. Shown again (a resize, `a` after a
    chunk), the pages already cut are reused."""

    def __init__(self, markdown: str, page_chars: int, first: int = 0) -> None:
        self._rest: Iterator[str] | None = iter_pages(markdown, page_chars)
        self.cut: list[str] = []
        self.page(first - 1)

    def page(self, number: int) -> str | None:
        """Page `number` (from 0), or None past the last."""
        while number >= len(self.cut) and self._rest is not None:
            try:
                self.cut.append(next(self._rest))
            except StopIteration:
                self._rest = None
        return self.cut[number] if 0 <= number < len(self.cut) else None

    @property
    def all_cut(self) -> bool:
        return self._rest is None
