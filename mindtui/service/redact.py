"""Links to notes an agent may not see, taken out of text handed to an agent.

A visible note may link to a private one (`[[Gehaltsgespräch 2027]]`); its name is itself
private. Wikilinks and markdown links whose target names a hidden note (by title, alias, path
or file name: the names `store.visibility.hidden_note_names` lists) become `[[private note]]`.
A name a visible note also bears is not (to an agent, links by it resolve to the visible note;
redacted, it would tell that a hidden note bears it). A link cut in half at the edge of a
window (an evidence sentence) cannot be checked: it becomes `[[…]]`.

What an agent gets is redacted in one place, `redact_for_agent`, from every value that can hold
note text: text, headings, frontmatter values, snippets (before they are cut), evidence.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from mindtui.text.names import exact_key
from mindtui.vault.links import MARKDOWN_LINK, WIKILINK, split_target

PLACEHOLDER = "[[private note]]"
CUT = "[[…]]"
_CUT_AT_END = re.compile(r"!?\[\[[^\]\n]*$|!?\[[^\]\n]*\]\([^)\s]*$")
_CUT_AT_START = re.compile(r"^[^\[\n]*?\]\]")


def _key(target: str) -> str:
    target = unquote(target.strip("<>")).split("#", 1)[0]
    if target.lower().endswith(".md"):
        target = target[:-3]
    return exact_key(target.lstrip("./"))


def _hidden(target: str, names: frozenset[str]) -> bool:
    key = _key(target)
    return bool(key) and (key in names or key.rpartition("/")[2] in names)


def redact(text: str | None, names: frozenset[str]) -> str | None:
    if not text or ("[[" not in text and "](" not in text and "]]" not in text):
        return text
    text = _CUT_AT_START.sub(CUT, _CUT_AT_END.sub(CUT, text))
    if not names:
        return text

    def wikilink(match: re.Match[str]) -> str:
        return PLACEHOLDER if _hidden(split_target(match.group(2))[1], names) else match.group(0)

    def markdown(match: re.Match[str]) -> str:
        return PLACEHOLDER if _hidden(match.group(2), names) else match.group(0)

    return MARKDOWN_LINK.sub(markdown, WIKILINK.sub(wikilink, text))


def redact_value(value, names: frozenset[str]):
    """Strings anywhere in a JSON-like value (frontmatter), redacted."""
    if isinstance(value, str):
        return redact(value, names)
    if isinstance(value, list):
        return [redact_value(item, names) for item in value]
    if isinstance(value, dict):
        return {key: redact_value(item, names) for key, item in value.items()}
    return value


# What explain may show an agent: ranks and the shape of the fusion, not raw scores (BM25
# statistics span the whole index, hidden notes included: a raw score would tell whether a
# hidden note contains a word).
_PUBLIC_EXPLAIN = {"fusion", "retriever_weight", "protected"}


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
