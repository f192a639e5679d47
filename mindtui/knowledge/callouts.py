"""Knowledge callouts in a note's text: `> [!decision] We use SQLite` and the lines under it.

    > [!decision] We use SQLite for the store
    > about: [[Projekt Zweites Gehirn]]
    > One file, WAL, no server to run.

The callout's type is one of the knowledge types (fact, decision, learning, playbook,
preference, reference, instruction; any case, a fold marker `+`/`-` allowed); other callouts
(`[!note]`, `[!edge]`, ...) are not knowledge. The text after the marker is the statement (the
title); without one, the first body line is. An `about:` line (a wikilink or a plain name, or
`topic: ...` for a free topic) says what it is about; a `quote:` line gives the words it rests
on; the other lines are the body. A callout inside a code block or nested in another quote is
not read. Pure: text in, callouts out.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

TYPES = ("fact", "decision", "learning", "playbook", "preference", "reference", "instruction")
_START = re.compile(r"^\s{0,3}>\s?\[!([A-Za-z]+)\][+-]?[ \t]*(.*)$")
_INSIDE = re.compile(r"^\s{0,3}>[ \t]?(.*)$")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_FIELD = re.compile(r"^(about|quote|thema|zitat)\s*:\s*(.*)$", re.IGNORECASE)
_WIKILINK = re.compile(r"^\[\[([^\]|#]+)(?:#[^\]|]*)?(?:\|[^\]]*)?\]\]$")
_FIELD_NAMES = {"about": "about", "thema": "about", "quote": "quote", "zitat": "quote"}


@dataclass(frozen=True)
class Callout:
    type: str
    title: str
    body: str
    about: str | None  # a note name (wikilink brackets removed) or "topic:<text>"
    quote: str | None
    line: int  # 0-based index of its first line in the text it was read from
    raw: str  # its lines as written (the `>` markers included)

    @property
    def text_hash(self) -> str:
        """sha256 of what the callout says (type, title, body, about, quote; whitespace runs as one
        space): an item keeps this as its source hash, so moving the callout changes nothing."""
        parts = [self.type, self.title, self.body, self.about or "", self.quote or ""]
        return hashlib.sha256("\x1f".join(" ".join(p.split()) for p in parts).encode("utf-8")).hexdigest()

    def proposal(self) -> dict:
        """The callout as a knowledge_proposal.v1 object (without the schema key)."""
        out: dict = {"type": self.type, "title": self.title}
        if self.body:
            out["body"] = self.body
        if self.about:
            out["about"] = self.about
        if self.quote:
            out["quote"] = self.quote
        return out


def _about(value: str) -> str | None:
    value = value.strip()
    if not value:
        return None
    link = _WIKILINK.match(value)
    if link:
        return link.group(1).strip() or None
    if value.lower().startswith("topic:"):
        topic = value[6:].strip()
        return f"topic:{topic}" if topic else None
    return value


def _unquote(value: str) -> str | None:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1].strip()
    for left, right in (("„", "“"), ("“", "”"), ("«", "»")):
        if value.startswith(left) and value.endswith(right) and len(value) >= 2:
            value = value[1:-1].strip()
    return value or None


def _finish(kind: str, head: str, lines: list[str], start: int, raw: list[str]) -> Callout | None:
    about = quote = None
    body: list[str] = []
    for line in lines:
        found = _FIELD.match(line.strip())
        if found:
            name = _FIELD_NAMES[found.group(1).lower()]
            if name == "about" and about is None:
                about = _about(found.group(2))
                continue
            if name == "quote" and quote is None:
                quote = _unquote(found.group(2))
                continue
        body.append(line.rstrip())
    while body and not body[0].strip():
        body.pop(0)
    title = " ".join(head.split())
    if not title and body:
        title = " ".join(body.pop(0).split())
    while body and not body[0].strip():
        body.pop(0)
    if not title:
        return None  # a callout that states nothing
    return Callout(kind, title, "\n".join(body).strip(), about, quote, start, "\n".join(raw))


def parse_callouts(text: str) -> list[Callout]:
    """The knowledge callouts in `text`, in order."""
    if "[!" not in text:
        return []
    out: list[Callout] = []
    lines = text.split("\n")
    fence: str | None = None
    index = 0
    while index < len(lines):
        line = lines[index]
        marker = _FENCE.match(line)
        if marker:
            if fence is None:
                fence = marker.group(1)[0] * len(marker.group(1))
            elif marker.group(1).startswith(fence):
                fence = None
            index += 1
            continue
        start = None if fence is not None else _START.match(line)
        if start is None or start.group(1).lower() not in TYPES:
            index += 1
            continue
        first = index
        body: list[str] = []
        index += 1
        while index < len(lines):
            inside = _INSIDE.match(lines[index])
            if inside is None or _START.match(lines[index]) or inside.group(1).lstrip().startswith(">"):
                break  # the callout ends: a line outside it, the next callout, or a nested quote
            body.append(inside.group(1))
            index += 1
        while index < len(lines) and _INSIDE.match(lines[index]) and not _START.match(lines[index]):
            index += 1  # a nested quote's remaining lines are not this callout's
        found = _finish(start.group(1).lower(), start.group(2), body, first, lines[first:first + 1 + len(body)])
        if found is not None:
            out.append(found)
    return out
