"""The curation queue behind the service: cards to show, answers, undo, refresh (owner only).

An answer that writes to the vault is imported again at once (the incremental importer, under
the job lock; when another job holds the lock, that job or the next import picks the change up),
so the link cards re-check themselves; a mass edit included (or its undo) rebuilds the change
graph at once. A write refused because the note changed since it was indexed imports it again
too, so the card shows the note as it is now.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import apsw

from mindtui.config import Settings
from mindtui.curation import actions
from mindtui.curation.kinds import EditContext, UnknownAction
from mindtui.curation.refresh import refresh
from mindtui.curation.registry import KINDS, LINK_KINDS, kind_of
from mindtui.curation.sessions import MASS_EDITS, MassEdit, included_sessions
from mindtui.curation.vault_edit import NoteChanged
from mindtui.errors import InputError, JobLockedError, MindtuiError
from mindtui.graph.change_graph import build_change_graph
from mindtui.graph.neighbours import find_note
from mindtui.jobs.lock import JobLock
from mindtui.knowledge.cards import register_kinds as register_knowledge_kinds
from mindtui.store import curation_store
from mindtui.store.curation_store import STATUSES, CurationItem
from mindtui.store.meta import VAULT_KEY, get_meta
from mindtui.store.pool import ConnectionPool
from mindtui.vault.importer import VaultImporter

register_knowledge_kinds()
KIND_NAMES = tuple(KINDS)
LOCKED_NOTICE = "another mindtui job is running: it (or the next import) picks the change up"


@dataclass
class Card:
    item_id: int
    kind: str
    status: str  # open | resolved | dismissed | snoozed
    importance: float  # 0..1, the queue's order
    subject: str  # a short label: "Note -> [[Missing]]"
    description: str  # one line: what is wrong
    note_id: str | None
    payload: dict  # the kind's details (paths, lines, evidence, candidates, cosine, ...)
    answer: dict | None
    actions: list[dict]  # [{name, key, description, args: [{name, type, description, required}]}]
    snoozed_until: str | None
    created_at: str
    updated_at: str
    resolved_at: str | None

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class ActionOutcome:
    item_id: int
    action: str
    status: str  # the card's status afterwards
    message: str
    changed_files: list[str] = field(default_factory=list)  # vault paths written, created or deleted
    notices: list[str] = field(default_factory=list)  # what happened after (re-import deferred, ...)
    undone: bool = False  # an undo's outcome

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def kind_actions() -> dict[str, list[dict]]:
    """Every kind's actions (name, key, description, args): what a front end can offer by name."""
    return {name: [action.as_dict() for action in kind.actions] for name, kind in KINDS.items()}


def card_of(item: CurationItem) -> Card:
    kind = kind_of(item.kind)
    subject, description = kind.summary(item)
    return Card(item.item_id, item.kind, item.status, item.importance, subject, description, item.note_id,
                item.payload, item.answer, [a.as_dict() for a in kind.actions], item.snoozed_until, item.created_at,
                item.updated_at, item.resolved_at)


class CurationDesk:
    def __init__(self, settings: Settings, pool: ConnectionPool, db_path: Path, registry: Callable) -> None:
        self.settings = settings
        self.pool = pool
        self.db_path = db_path
        self.registry = registry  # -> the TypeRegistry (loaded once by the service)

    def _vault(self, conn: apsw.Connection) -> Path | None:
        """The vault the database indexes (note paths are relative to it), else the configured one."""
        root = get_meta(conn, VAULT_KEY)
        return Path(root) if root else self.settings.vault

    # -- reading ---------------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        with self.pool.connection() as pooled:
            found = curation_store.status_counts(pooled.conn)
        return {name: found.get(name, 0) for name in KIND_NAMES}

    def list(self, kind: str | None = None, status: str | None = "open", limit: int | None = None) -> list[Card]:
        if kind is not None:
            kind_of(kind)
        if status is not None and status not in STATUSES:
            raise InputError(f"unknown status {status!r}; choose from {', '.join(STATUSES)}")
        with self.pool.connection() as pooled:
            items = curation_store.list_items(pooled.conn, kind, status, limit)
        return [card_of(item) for item in items]

    def card(self, item_id: int) -> Card:
        with self.pool.connection() as pooled:
            return card_of(actions.get_card(pooled.conn, item_id))

    # -- answering -------------------------------------------------------------------------
    def resolve(self, item_id: int, action: str, args: dict) -> ActionOutcome:
        with self.pool.connection() as pooled:
            conn = pooled.conn
            ctx = EditContext(conn, self.settings, self._vault(conn))
            self._finish_interrupted(ctx)
            _, chosen = actions.answerable(conn, item_id, action)
            try:
                done = actions.perform(ctx, item_id, action, self._arguments(conn, chosen, args))
            except NoteChanged as exc:
                notices = self._reimport(conn, ctx.vault)
                raise NoteChanged(str(exc) + "".join(f" ({n})" for n in notices)) from None
            notices = self._after(conn, ctx.vault, done)
        return ActionOutcome(item_id, action, done.item.status, done.message, done.files, notices)

    def preview(self, item_id: int, action: str, args: dict) -> list[actions.PlannedWrite]:
        """The vault writes an answer would make, made by nothing (a dry run of `resolve`)."""
        with self.pool.connection() as pooled:
            conn = pooled.conn
            _, chosen = actions.answerable(conn, item_id, action)
            ctx = EditContext(conn, self.settings, self._vault(conn))
            return actions.preview(ctx, item_id, action, self._arguments(conn, chosen, args))

    def undo(self) -> ActionOutcome | None:
        with self.pool.connection() as pooled:
            conn = pooled.conn
            ctx = EditContext(conn, self.settings, self._vault(conn))
            self._finish_interrupted(ctx)
            done = actions.undo_last(ctx)
            if done is None:
                return None
            notices = self._after(conn, ctx.vault, done)
        return ActionOutcome(done.item.item_id, done.action.name, done.item.status, done.message, done.files, notices,
                             undone=True)

    def _arguments(self, conn: apsw.Connection, action, given: dict) -> dict:
        """The action's arguments: note names resolved to note ids, text stripped, whole numbers checked."""
        known = {arg.name: arg for arg in action.args}
        extra = sorted(name for name, value in given.items() if value is not None and name not in known)
        if extra:
            raise UnknownAction(f"{action.name} takes no {', '.join(extra)}")
        out = {}
        for name, arg in known.items():
            value = given.get(name)
            if value is None:
                if arg.required:
                    raise UnknownAction(f"{action.name} needs --{name} ({arg.description})")
                continue
            if arg.type == "note":
                out[name] = find_note(conn, str(value)).note_id
            elif arg.type == "text":
                if not isinstance(value, str) or not value.strip():
                    raise UnknownAction(f"{action.name}: --{name} must be some text")
                out[name] = value.strip()
            elif isinstance(value, bool) or not isinstance(value, int):
                raise UnknownAction(f"{action.name}: --{name} must be a whole number, not {value!r}")
            else:
                out[name] = value
        return out

    def _after(self, conn: apsw.Connection, vault: Path | None, done: actions.Done) -> list[str]:
        notices = self._reimport(conn, vault) if done.files else []
        if done.action.rebuilds_change_graph:
            notices += self._rebuild_change_graph(conn, vault)
        return notices

    # -- keeping the index in step ---------------------------------------------------------
    def _lock(self) -> JobLock:
        """The job lock; a live-vault import holding it is waited for (it is short)."""
        return JobLock(self.db_path, "curation", self.settings.jobs.wait_for_watch_s)

    def _finish_interrupted(self, ctx: EditContext) -> None:
        """An answer killed before its files were all written is finished first (and imported)."""
        if ctx.vault is not None and actions.finish_pending(ctx):
            self._reimport(ctx.conn, ctx.vault)

    def _reimport(self, conn: apsw.Connection, vault: Path | None) -> list[str]:
        """Import the vault again (incremental: only what changed is read) and refresh the link cards."""
        if vault is None:
            return ["no vault known: the change is imported by the next import"]
        try:
            with self._lock():
                VaultImporter(conn, vault, self.registry(), self.settings).run()
                refresh(conn, self.settings, kinds=LINK_KINDS)
        except JobLockedError:
            return [LOCKED_NOTICE]
        except MindtuiError as exc:  # e.g. a refused mass deletion: the answer stands, the import says why
            return [f"the import after the change did not finish: {exc}"]
        return []

    def _rebuild_change_graph(self, conn: apsw.Connection, vault: Path | None) -> list[str]:
        if vault is None:
            return ["no vault known: the change graph is rebuilt by the next graph step"]
        try:
            with self._lock():
                self._change_graph_and_cards(conn, vault, (MassEdit.name,))
        except JobLockedError:
            return [LOCKED_NOTICE]
        return []

    def _change_graph_and_cards(self, conn: apsw.Connection, vault: Path, kinds) -> dict:
        graph = build_change_graph(conn, vault, self.settings, include=included_sessions(conn)).as_dict()
        return refresh(conn, self.settings, kinds=kinds, sources={MASS_EDITS: graph["mass_edits"]}).as_dict()

    def refresh(self) -> dict:
        """Every kind, as the nightly graph step does it (the change graph is rebuilt for the mass
        edits); JobLockedError while another job runs."""
        with self.pool.connection() as pooled, self._lock():
            vault = self._vault(pooled.conn)
            if vault is None:
                return refresh(pooled.conn, self.settings).as_dict()
            return self._change_graph_and_cards(pooled.conn, vault, KIND_NAMES)
