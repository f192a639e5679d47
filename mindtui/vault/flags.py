"""Consent and privacy flags from frontmatter, parsed strictly and fail-closed.

Frontmatter that YAML cannot read still carries the owner's wishes: its lines are searched
for the flags (`read_flags_from_lines`), and a flag that is mentioned but cannot be read
there counts as the restrictive value.

`ai_processing`: true/yes/on/1 lets models read the note (the default when the key is absent);
none/no/off/false/0 keeps every model away from it. `private: true` (same words) or
`visibility: private` keeps it from agents; `visibility: shared|public` does not. Any other
value counts as the restrictive one and becomes a warning with the note's path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

ON = frozenset({"true", "yes", "on", "1"})
OFF = frozenset({"none", "no", "off", "false", "0"})
SHARED = frozenset({"shared", "public"})


def _word(value) -> str | None:
    """A flag value as one lower-case word (YAML already turned yes/no/on/off into booleans)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value.strip().lower()
    return None


@dataclass
class Flags:
    ai_processing: bool = True
    private: bool = False
    warnings: list[str] = field(default_factory=list)


def flag_key(name) -> str | None:
    """The consent flag a frontmatter key names, in any case and with spaces or hyphens
    (`Private`, `AI-Processing`): the owner meant it, and read case-sensitively such a note was
    open to agents without a word. None for any other key."""
    if not isinstance(name, str):
        return None
    key = re.sub(r"[\s-]+", "_", name.strip().lower())
    return key if key in FLAG_KEYS else None


def _spellings(metadata: dict, key: str, flags: Flags) -> list:
    """The values of every spelling of the flag `key`, each other spelling warned about."""
    values = []
    for name, value in metadata.items():
        if flag_key(name) == key:
            values.append(value)
            if name != key:
                flags.warnings.append(f"frontmatter key {name!r} is read as the consent flag {key}")
    return values


def _switch(metadata: dict, key: str, restrictive: bool, flags: Flags, consequence: str) -> bool | None:
    """The key's yes/no value; None when absent; an unknown value is the restrictive one, warned;
    of several spellings with different values, the restrictive one."""
    found = set()
    for value in _spellings(metadata, key, flags):
        word = _word(value)
        if word in ON:
            found.add(True)
        elif word in OFF:
            found.add(False)
        else:
            flags.warnings.append(f"{key}: {value!r} is not one of true/yes/on/1 or none/no/off/false; "
                                  f"treated as {consequence}")
            found.add(restrictive)
    if not found:
        return None
    return restrictive if restrictive in found else found.pop()


def read_flags(metadata: dict) -> Flags:
    flags = Flags()
    ai = _switch(metadata, "ai_processing", False, flags, "none (no model reads this note)")
    flags.ai_processing = True if ai is None else ai
    flags.private = bool(_switch(metadata, "private", True, flags, "private"))
    for value in _spellings(metadata, "visibility", flags):
        word = _word(value)
        if word == "private":
            flags.private = True
        elif word not in SHARED:
            flags.private = True
            flags.warnings.append(f"visibility: {value!r} is not private, shared or public; treated as private")
    return flags


FLAG_KEYS = ("ai_processing", "private", "visibility")
# What a flag given twice in one frontmatter counts as (YAML keeps the last silently; the owner's
# intent is unknown): the restrictive value, as for one that cannot be read.
RESTRICTIVE_VALUES = {"ai_processing": "none", "private": True, "visibility": "private"}
_FLAG_LINE = re.compile(r"^\s*(ai[ _-]processing|private|visibility)\s*:\s*(.*?)\s*(?:\s#.*)?$", re.IGNORECASE)


def read_flags_from_lines(lines: list[str]) -> Flags:
    """Flags from frontmatter lines that YAML could not read (malformed, or not a mapping)."""
    found: dict[str, object] = {}
    for line in lines:
        match = _FLAG_LINE.match(line)
        if match:
            found[match.group(1).lower()] = match.group(2).strip("'\"")
    flags = read_flags(found)
    text = "\n".join(lines).lower()
    for key in FLAG_KEYS:
        if key in text and key not in found:  # mentioned, but not as a line we can read
            if key == "ai_processing":
                flags.ai_processing = False
            else:
                flags.private = True
            flags.warnings.append(f"{key} is mentioned in frontmatter that cannot be read; treated as "
                                  + ("none (no model reads this note)" if key == "ai_processing" else "private"))
    return flags
