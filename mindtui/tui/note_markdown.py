"""Obsidian markdown made readable in a terminal markdown view (pure text, no Textual).

The note view renders CommonMark; Obsidian's own syntax would show as noise there:
frontmatter, `> [!note] Title` callouts, `[[wikilinks|labels]]`, `![[embeds]]`, `%%comments%%`
and `==highlights==`. Each is turned into plain markdown that says the same thing.
"""

from __future__ import annotations

import re
from urllib.parse import quote, unquote

WIKILINK_SCHEME = "note:"
_FRONTMATTER = re.compile(r"\A---[ \t]*\n.*?\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_CALLOUT = re.compile(r"^(?P<quote>(?:>\s*)+)\[!(?P<kind>[^\]]+)\](?P<fold>[+-]?)\s*(?P<title>.*)$")
_WIKILINK = re.compile(r"(?P<embed>!?)\[\[(?P<target>[^\]|#^]*)(?P<sub>[#^][^\]|]*)?(?:\|(?P<label>[^\]]*))?\]\]")
_COMMENT = re.compile(r"%%.*?%%", re.DOTALL)
_HIGHLIGHT = re.compile(r"==(?=\S)(.+?)(?<=\S)==")
_FENCE = re.compile(r"^\s*(```|~~~)")


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


def _inline(line: str) -> str:
    return _HIGHLIGHT.sub(r"**\1**", _WIKILINK.sub(_link, line))


def readable(text: str) -> str:
    """The note's body as CommonMark: frontmatter dropped, callouts titled, links followable."""
    body = _COMMENT.sub("", strip_frontmatter(text))
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
