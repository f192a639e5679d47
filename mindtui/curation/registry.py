"""The kinds of curation card. A new kind: a Kind subclass in its own module, listed here, or added by
`register` from a layer above (the knowledge kinds: mindtui.knowledge.cards)."""

from __future__ import annotations

from mindtui.curation.kinds import Kind
from mindtui.curation.links import AliasLink, AmbiguousLink, UnresolvedLink
from mindtui.curation.sessions import MassEdit
from mindtui.curation.suggestions import LinkSuggestion
from mindtui.errors import InputError

KINDS: dict[str, Kind] = {kind.name: kind for kind in (UnresolvedLink(), AliasLink(), AmbiguousLink(),
                                                        LinkSuggestion(), MassEdit())}
# Refreshed at the end of every import (their causes are the import's unresolved links).
LINK_KINDS = (UnresolvedLink.name, AliasLink.name, AmbiguousLink.name)


class UnknownKind(InputError):
    """A curation kind that does not exist."""


def register(kind: Kind) -> None:
    """Add a kind from a layer above the queue (idempotent for the same class; a second class of
    the same name is an error)."""
    known = KINDS.get(kind.name)
    if known is not None and type(known) is not type(kind):
        raise ValueError(f"curation kind {kind.name!r} is registered already by {type(known).__name__}")
    KINDS.setdefault(kind.name, kind)


def kind_of(name: str) -> Kind:
    if name not in KINDS:
        raise UnknownKind(f"unknown curation kind {name!r}; known kinds: {', '.join(KINDS)}")
    return KINDS[name]


def kinds_named(names) -> list[Kind]:
    return [kind_of(name) for name in names]
