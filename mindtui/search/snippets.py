"""What a result shows of its chunk: a window around the first query word, and the spans of the
words that match a query word's stem (what a front end highlights)."""

from __future__ import annotations

from mindtui.text.analysis import WRITTEN_WORD, stem_all_languages
from mindtui.text.names import composed

SNIPPET_CHARS = 220


def snippet(text: str, wanted: frozenset[str]) -> str:
    """A window of the chunk around the first word one of whose stems is wanted (ParsedQuery.stem_set)."""
    flat = " ".join(text.split())
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
