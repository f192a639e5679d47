"""Consent and privacy flags from frontmatter, parsed strictly and fail-closed.

`ai_processing`: true/yes/on/1 lets models read the note (the default when the key is absent);
none/no/off/false/0 keeps every model away from it. `private: true` (same words) or
`visibility: private` keeps it from agents; `visibility: shared|public` does not. Any other
value counts as the restrictive one and becomes a warning with the note's path.
"""

from __future__ import annotations

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


def read_flags(metadata: dict) -> Flags:
    flags = Flags()
    if "ai_processing" in metadata:
        word = _word(metadata["ai_processing"])
        if word in OFF:
            flags.ai_processing = False
        elif word not in ON:
            flags.ai_processing = False
            flags.warnings.append(f"ai_processing: {metadata['ai_processing']!r} is not one of "
                                  "true/yes/on/1 or none/no/off/false; treated as none (no model reads this note)")
    if "private" in metadata:
        word = _word(metadata["private"])
        if word in ON:
            flags.private = True
        elif word not in OFF:
            flags.private = True
            flags.warnings.append(f"private: {metadata['private']!r} is not one of true/yes/on/1 or "
                                  "no/off/false; treated as private")
    if "visibility" in metadata:
        word = _word(metadata["visibility"])
        if word == "private":
            flags.private = True
        elif word not in SHARED:
            flags.private = True
            flags.warnings.append(f"visibility: {metadata['visibility']!r} is not private, shared or public; "
                                  "treated as private")
    return flags
