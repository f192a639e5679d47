"""Vault-relative path patterns (import.exclude, graph.work_logs, privacy.private_paths).

A pattern with glob characters is a glob over '/'-separated paths: `**` spans folders, `*` and
`?` stay within one. A pattern without any (`Privat`, `Privat/`, `Journal/Log.md`) names a
folder or a file: it matches that path and everything under it, since that is what a person
means when they write a folder's name. Paths and patterns compare composed (NFC): a folder a Mac
named `Ärzte` is spelt decomposed, and `privacy.private_paths: [Ärzte]` typed elsewhere must hide it.
"""

from __future__ import annotations

import re
from functools import lru_cache

from mindtui.text.names import composed

_GLOB_CHARS = frozenset("*?")


@lru_cache(maxsize=256)
def _pattern_regex(pattern: str) -> re.Pattern[str]:
    pattern = composed(pattern)
    if not _GLOB_CHARS & set(pattern):
        return re.compile(re.escape(pattern.strip("/")) + r"(?:/.*)?\Z")
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def excluded_by(path: str, patterns: list[str] | tuple[str, ...]) -> str | None:
    """The first pattern that matches the vault path, or None."""
    path = composed(path)
    for pattern in patterns:
        if _pattern_regex(pattern).match(path):
            return pattern
    return None
