"""Links to notes an agent may not see, taken out of text handed to an agent.

A visible note may link to a private one (`[[Gehaltsgespräch 2027]]`); its name is itself
private. Wikilinks and markdown links whose target names a hidden note (by title, alias, path
or file name: the names `store.visibility.hidden_note_names` lists) become `[[private note]]`.
A name shared by a visible and a hidden note is redacted too (fail-closed).
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from mindtui.text.names import exact_key
from mindtui.vault.links import MARKDOWN_LINK, WIKILINK, split_target

PLACEHOLDER = "[[private note]]"


def _key(target: str) -> str:
    target = unquote(target.strip("<>")).split("#", 1)[0]
    if target.lower().endswith(".md"):
        target = target[:-3]
    return exact_key(target.lstrip("./"))


def _hidden(target: str, names: frozenset[str]) -> bool:
    key = _key(target)
    return bool(key) and (key in names or key.rpartition("/")[2] in names)


def redact(text: str | None, names: frozenset[str]) -> str | None:
    if not text or not names or ("[[" not in text and "](" not in text):
        return text

    def wikilink(match: re.Match[str]) -> str:
        return PLACEHOLDER if _hidden(split_target(match.group(2))[1], names) else match.group(0)

    def markdown(match: re.Match[str]) -> str:
        return PLACEHOLDER if _hidden(match.group(2), names) else match.group(0)

    return MARKDOWN_LINK.sub(markdown, WIKILINK.sub(wikilink, text))
