"""What a kind of curation card is: how its causes are found, what can be done about them.

A kind is a class with a `name`, its `actions`, `detect()` (the causes that exist now) and
`plan()` (what an action changes: card state and vault files). The queue's core (`refresh`,
`actions`) knows nothing of any kind; a new kind (unresolved_entity, duplicate, ...) is a new
module with a Kind subclass added to `registry.KINDS`.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from pathlib import Path

import apsw

from mindtui.config import Settings
from mindtui.curation.vault_edit import check_inside, write_target
from mindtui.errors import InputError
from mindtui.store import curation_store
from mindtui.store.curation_store import CurationItem


class UnknownAction(InputError):
    """An action a card's kind does not have, or an argument it cannot use."""


def now_iso() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


subject = curation_store.subject_key  # subject(note=..., target=...): see the store for the convention


@dataclass(frozen=True)
class Arg:
    name: str  # target | days
    type: str  # note (a note name, resolved by the service to a note id) | int
    description: str
    required: bool = True


@dataclass(frozen=True)
class Action:
    name: str
    key: str  # the one-key hint a front end binds
    description: str
    args: tuple[Arg, ...] = ()
    rebuilds_change_graph: bool = False  # the change graph is rebuilt after it (and after its undo)
    # It writes vault files beyond adding one link (a new note, links rewritten): a front end shows
    # the planned writes first (`actions.preview`, a dry run: such a plan only reads) and asks.
    confirm: bool = False

    def as_dict(self) -> dict:
        return {"name": self.name, "key": self.key, "description": self.description,
                "args": [arg.__dict__ for arg in self.args], "confirm": self.confirm}


@dataclass(frozen=True)
class Candidate:
    """A cause found now: the card it makes (importance in 0..1)."""

    subject_key: str
    note_id: str | None
    payload: dict
    importance: float


@dataclass(frozen=True)
class FileEdit:
    """A vault file an action writes: `expected_hash` is the sha256 the file must still have (the
    indexed note's), None for a new file (which must not exist); new_text None deletes it."""

    path: str
    expected_hash: str | None
    new_text: str | None


@dataclass
class Plan:
    """What an action does: the card's new state and the files it writes."""

    status: str  # resolved | dismissed | snoozed
    answer: dict
    message: str
    edits: list[FileEdit] = field(default_factory=list)
    snoozed_until: str | None = None


@dataclass
class EditContext:
    conn: apsw.Connection
    settings: Settings
    vault: Path | None  # the vault root (None when unknown: actions that touch files refuse)

    def vault_file(self, path: str) -> Path:
        """The absolute path of a vault-relative one, to read (EditRefused for a path that leaves the vault)."""
        return check_inside(self._root(), path)

    def write_file(self, path: str) -> Path:
        """Where a write to a vault-relative path goes: its real path (vault_edit.write_target)."""
        return write_target(self._root(), path)

    def _root(self) -> Path:
        if self.vault is None:
            raise InputError("the database does not say which vault it indexes: set `vault:` in the config or "
                             "run an import first")
        return self.vault


class Kind:
    name = ""
    family = ""  # the module it lives in (links, suggestions, sessions)
    actions: tuple[Action, ...] = ()
    needs: tuple[str, ...] = ()  # refresh sources it must be given (else it is skipped: nothing is closed)
    gone_reason = "the cause is gone"

    def detect(self, conn: apsw.Connection, settings: Settings, sources: dict) -> list[Candidate] | None:
        """The causes that exist now; None when they cannot be known now (no vectors yet): the kind's
        cards are left as they are."""
        raise NotImplementedError

    def new_card_limit(self, conn: apsw.Connection, settings: Settings, waiting: int) -> int | None:
        """How many new cards one refresh may add (`waiting`: this kind's open and snoozed cards); None: all."""
        return None

    def summary(self, item: CurationItem) -> tuple[str, str]:
        """(subject, one-line description) for lists."""
        raise NotImplementedError

    def plan(self, ctx: EditContext, item: CurationItem, action: Action, args: dict) -> Plan:
        raise NotImplementedError

    def action(self, name: str) -> Action:
        for action in self.actions:
            if action.name == name:
                return action
        raise UnknownAction(f"{self.name} cards have no action {name!r}; "
                            f"choose from {', '.join(a.name for a in self.actions)}")


def dismiss_plan(action: Action, message: str, status: str = "dismissed") -> Plan:
    return Plan(status, {"by": "owner", "action": action.name}, message)
