"""What a result shows of its chunk: a window around the first query word, and the spans of the
words that match a query word's stem (what a front end highlights)."""

from __future__ import annotations

import re

from mindtui.text.analysis import WRITTEN_WORD, stem_all_languages
from mindtui.text.names import composed

SNIPPET_CHARS = 220

# What a snippet leaves out of a chunk's markdown, outside code: images and embeds (a README's
# row of badges filled the window with shields.io URLs), a link's target (its label stays) and
# HTML tags (<br>, <span ...>): a reader sees neither where the note is rendered.
_CODE = re.compile(r"(`+).+?\1", re.DOTALL)
_IMAGE = re.compile(r"!\[[^\]\n]*\]\([^)\n]*\)|!\[\[[^\]\n]*\]\]")
_LINK = re.compile(r"\[([^\]\n]*)\]\([^)\n]*\)")
_HTML_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>\n]*)?/?>")


def shown_text(text: str) -> str:
    """The chunk's text as a snippet shows it (see above; code spans and blocks as written)."""
    if not any(mark in text for mark in ("](", "![[", "<")):
        return text
    pieces, last = [], 0
    for code in _CODE.finditer(text):
        pieces += [_plain(text[last:code.start()]), code.group(0)]
        last = code.end()
    return "".join(pieces + [_plain(text[last:])])


def _plain(text: str) -> str:
    return _HTML_TAG.sub(" ", _LINK.sub(r"\1", _IMAGE.sub(" ", text)))


def snippet(text: str, wanted: frozenset[str]) -> str:
    """A window of the chunk around the first word one of whose stems is wanted (ParsedQuery.stem_set)."""
    flat = " ".join(shown_text(text).split())
    if len(flat) <= SNIPPET_CHARS:
        return flat
    for match in WRITTEN_WORD.finditer(flat):
        if _stems(match.group(0)) & wanted:
            start = max(0, match.start() - SNIPPET_CHARS // 3)
            break
    else:
        start = 0
    cut = flat[start:start + SNIPPET_CHARS]
    return ("…" if start else "") + cut + ("…" if start + SNIPPET_CHARS < len(flat) else "")


def highlight_spans(text: str, wanted: frozenset[str]) -> list[tuple[int, int]]:
    """The [start, end) spans of the words in text one of whose stems is wanted (ParsedQuery.stem_set)."""
    if not wanted:
        return []
    return [(m.start(), m.end()) for m in WRITTEN_WORD.finditer(text) if _stems(m.group(0)) & wanted]


def _stems(word: str) -> set[str]:
    return stem_all_languages(composed(word).lower())
