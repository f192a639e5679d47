"""Who reads: the owner at the keyboard, or an agent (anything automatic).

`agent` never sees a private note (frontmatter `private: true`, `visibility: private`, or a
folder in `privacy.private_paths`) nor a note with `ai_processing: none`. The rule is enforced
where the data is read (store connections opened for an audience), never in a front end.
"""

from __future__ import annotations

import enum

from mindtui.errors import ConfigError


class Audience(str, enum.Enum):
    OWNER = "owner"
    AGENT = "agent"

    @classmethod
    def parse(cls, value: "str | Audience") -> "Audience":
        try:
            return cls(value)
        except ValueError:
            raise ConfigError(f"unknown audience {value!r}; expected owner or agent") from None
