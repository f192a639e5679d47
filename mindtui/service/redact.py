"""Links to notes an agent may not see, taken out of text handed to an agent.

A visible note may link to a private one (`[[Gehaltsgespräch 2027]]`); its name is itself
private. So is the fact that a private note bears it: a link redacted only when it names a hidden
note would tell an agent that the note exists, where a link to no note reads as written. So a
wikilink or markdown link stands only when its target is a name of a note the agent sees (title,
alias, path or one of its suffixes down to the file name: `store.names.is_visible_name`), an
attachment (`![[plan.png]]`), a URL or a heading of the note itself (`[[#Ziele]]`); any other
becomes `[[unavailable note]]`, the same for a hidden note and for none, in the vault with the
hidden note and without it. A link cut in half at the edge of a window (an evidence sentence)
cannot be checked: it becomes `[[…]]`.

What an agent gets is redacted in one place, `redact_for_agent`, from every value that can hold
note text: text, headings, frontmatter values, snippets (before they are cut), evidence.
"""

from __future__ import annotations

import re
from typing import Callable
from urllib.parse import unquote

from mindtui.text.names import exact_key
from mindtui.vault.links import MARKDOWN_LINK, WIKILINK, is_attachment, is_url, split_target

PLACEHOLDER = "[[unavailable note]]"
CUT = "[[…]]"
_CUT_AT_END = re.compile(r"!?\[\[[^\]\n]*$|!?\[[^\]\n]*\]\([^)\s]*$")
_CUT_AT_START = re.compile(r"^[^\[\n]*?\]\]")


def _key(target: str) -> str:
    target = unquote(target.strip("<>")).split("#", 1)[0]
    if target.lower().endswith(".md"):
        target = target[:-3]
    return exact_key(target.lstrip("./"))


def _stands(target: str, visible: Callable[[str], bool]) -> bool:
    """Whether a link's target may be shown as written: it is a name of a note the reader sees
    (a path ending in its file name alone is not: `[[Privat/Plan]]` names no visible `Projekte/Plan`
    by that path, and may be a hidden note's), an attachment, a URL, or a heading of the linking note."""
    if is_url(target) or is_attachment(target.split("#", 1)[0]):
        return True
    key = _key(target)
    return not key or visible(key)


def redact(text: str | None, visible: Callable[[str], bool]) -> str | None:
    """`text` with every link that does not reach a note `visible` knows (exact_key -> whether a
    note the reader sees bears that name) replaced, and links cut at its edges marked."""
    if not text or ("[[" not in text and "](" not in text and "]]" not in text):
        return text
    text = _CUT_AT_START.sub(CUT, _CUT_AT_END.sub(CUT, text))

    def wikilink(match: re.Match[str]) -> str:
        if match.group(0) == CUT or _stands(split_target(match.group(2))[1], visible):
            return match.group(0)
        return PLACEHOLDER

    def markdown(match: re.Match[str]) -> str:
        return match.group(0) if _stands(match.group(2).strip("<>"), visible) else PLACEHOLDER

    return MARKDOWN_LINK.sub(markdown, WIKILINK.sub(wikilink, text))


def redact_value(value, visible: Callable[[str], bool]):
    """Strings anywhere in a JSON-like value (frontmatter), redacted."""
    if isinstance(value, str):
        return redact(value, visible)
    if isinstance(value, list):
        return [redact_value(item, visible) for item in value]
    if isinstance(value, dict):
        return {key: redact_value(item, visible) for key, item in value.items()}
    return value


# What explain may show an agent: ranks and the shape of the fusion, not raw scores (BM25
# statistics span the whole index, hidden notes included: a raw score would tell whether a
# hidden note contains a word).
_PUBLIC_EXPLAIN = {"fusion", "retriever_weight", "protected", "not_embedded"}


def public_explain(explain: dict) -> dict:
    out = {}
    for key, value in explain.items():
        if key in ("fts", "vector", "title", "rerank") and isinstance(value, dict):
            out[key] = {"rank": value["rank"]}
        elif key == "memory" and isinstance(value, dict):  # its text names no past query for an agent
            out[key] = {"rank": value["rank"], "why": value.get("why", "")}
        elif key == "graph" and isinstance(value, dict):
            out[key] = {"from": value.get("from", [])}
        elif key in _PUBLIC_EXPLAIN:
            out[key] = value
    return out
