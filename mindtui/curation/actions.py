"""Answer a card (the kind plans, this module performs) and undo the last answer.

An answer is one database transaction (the card's new state and an undo record with each
file's text before and the hash of what was written) around the file writes: the files are
checked again inside it (still as indexed, a new file still absent), written atomically, and
put back if anything fails before the commit. Undo reverses the latest answer not undone yet:
each file only if it still has what the answer wrote (else nothing is undone), then the card's
status, answer and snooze. Both work across processes: the record is in the database.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from mindtui.curation.kinds import Action, EditContext, FileEdit, now_iso
from mindtui.curation.registry import kind_of
from mindtui.curation.vault_edit import EditRefused, NoteChanged, atomic_write, read_bytes, remove, sha256_hex
from mindtui.errors import InputError, OperationFailed
from mindtui.store import curation_store as store
from mindtui.store.batch import immediate
from mindtui.store.curation_store import CurationItem


class UnknownCard(InputError):
    """No card with this id, or one that cannot be answered (already closed)."""


class UndoRefused(OperationFailed):
    """A file changed after the answer: undoing would lose that change, so nothing is undone."""


@dataclass
class Done:
    """What an answer or an undo did."""

    item: CurationItem  # the card afterwards
    action: Action
    message: str
    files: list[str] = field(default_factory=list)  # vault paths written, created or deleted
    action_id: int = 0


def get_card(conn, item_id: int) -> CurationItem:
    item = store.get_item(conn, item_id)
    if item is None:
        raise UnknownCard(f"no curation card {item_id}")
    return item


def answerable(conn, item_id: int, action_name: str) -> tuple[CurationItem, Action]:
    """The card and its kind's action; UnknownCard for a card that is closed already."""
    item = get_card(conn, item_id)
    action = kind_of(item.kind).action(action_name)
    if item.status not in (store.OPEN, store.SNOOZED):
        raise UnknownCard(f"card {item_id} is {item.status} already; `undo` reopens the card answered last")
    return item, action


def perform(ctx: EditContext, item_id: int, action_name: str, args: dict) -> Done:
    item, action = answerable(ctx.conn, item_id, action_name)
    plan = kind_of(item.kind).plan(ctx, item, action, args)
    now = now_iso()
    for edit in plan.edits:
        _checked_before(ctx, edit)

    def write() -> tuple[int, list]:
        if store.get_item(ctx.conn, item_id) != item:
            raise OperationFailed(f"card {item_id} changed meanwhile (answered in another window?); look again")
        # The files again, now that the database is locked for writing.
        changes = [(edit.path, _checked_before(ctx, edit),
                    None if edit.new_text is None else edit.new_text.encode("utf-8")) for edit in plan.edits]
        records = [{"path": path, "before": None if before is None else before.decode("utf-8"),
                    "after_sha256": None if after is None else sha256_hex(after)} for path, before, after in changes]
        store.set_item_state(ctx.conn, item_id, plan.status, plan.answer, plan.snoozed_until, now)
        return store.insert_action(ctx.conn, item_id, action.name, args, records, item, now), changes

    action_id = _transaction(ctx, write)
    return Done(store.get_item(ctx.conn, item_id), action, plan.message, [edit.path for edit in plan.edits], action_id)


@dataclass
class PlannedWrite:
    """A vault file an answer would write (a dry run): its text now and after, and the diff."""

    path: str
    change: str  # create | modify | delete
    before: str | None
    after: str | None
    diff: str  # unified diff, before -> after

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def preview(ctx: EditContext, item_id: int, action_name: str, args: dict) -> list[PlannedWrite]:
    """What `perform` would write, writing nothing: for the actions marked `confirm`, whose plan
    only reads (other kinds' plans may decide things already, a knowledge card's does)."""
    item, action = answerable(ctx.conn, item_id, action_name)
    if not action.confirm:
        raise InputError(f"{action.name} on {item.kind} cards has no preview: it writes no more than one link")
    plan = kind_of(item.kind).plan(ctx, item, action, args)
    writes = []
    for edit in plan.edits:
        data = _checked_before(ctx, edit)
        before = None if data is None else data.decode("utf-8", errors="replace")
        change = "create" if before is None else "delete" if edit.new_text is None else "modify"
        diff = "".join(difflib.unified_diff((before or "").splitlines(keepends=True),
                                            (edit.new_text or "").splitlines(keepends=True),
                                            fromfile="/dev/null" if before is None else f"a/{edit.path}",
                                            tofile="/dev/null" if edit.new_text is None else f"b/{edit.path}"))
        writes.append(PlannedWrite(edit.path, change, before, edit.new_text, diff))
    return writes


def undo_last(ctx: EditContext) -> Done | None:
    """Reverse the latest answer not undone yet; None when there is none."""
    last = store.last_action(ctx.conn)
    if last is None:
        return None
    item = get_card(ctx.conn, last.item_id)
    action = kind_of(item.kind).action(last.action)
    _undo_changes(ctx, last, item)  # refuse before taking the write lock
    now = now_iso()

    def write() -> tuple[int, list]:
        if store.last_action(ctx.conn) != last:
            raise OperationFailed("another answer was given meanwhile; undo again to reverse it first")
        changes = _undo_changes(ctx, last, item)
        store.set_item_state(ctx.conn, item.item_id, last.prev_status, last.prev_answer, last.prev_snoozed_until, now)
        store.mark_undone(ctx.conn, last.action_id, now)
        return last.action_id, changes

    _transaction(ctx, write)
    return Done(store.get_item(ctx.conn, item.item_id), action, f"undid {last.action} on card {item.item_id}",
                [record["path"] for record in last.files], last.action_id)


def _undo_changes(ctx: EditContext, last: store.CurationAction, item: CurationItem) -> list:
    """[(path, now, before the answer)] for each file, newest first; UndoRefused when one of them
    no longer has what the answer wrote."""
    changes = []
    for record in reversed(last.files):
        current = read_bytes(ctx.vault_file(record["path"]))
        if (None if current is None else sha256_hex(current)) != record["after_sha256"]:
            raise UndoRefused(f"{record['path']} changed after `{last.action}` on card {item.item_id}; undoing it "
                              "would lose that change, so nothing was undone")
        before = None if record["before"] is None else record["before"].encode("utf-8")
        changes.append((record["path"], current, before))
    return changes


def _checked_before(ctx: EditContext, edit: FileEdit) -> bytes | None:
    """The file's bytes now, which must be what the plan expects (indexed content, or no file)."""
    data = read_bytes(ctx.vault_file(edit.path))
    if edit.expected_hash is None:
        if data is not None:
            raise EditRefused(f"{edit.path} exists already; not overwritten")
        return None
    if data is None or sha256_hex(data) != edit.expected_hash:
        raise NoteChanged(f"{edit.path} changed since it was indexed; nothing was written. The note is imported "
                          "again and the card checked again: look at it once more")
    return data


def _transaction(ctx: EditContext, write) -> int:
    """One transaction: `write()` writes the database rows and returns (result, [(path, before,
    after)]); then the files are written (after None deletes one). Files already written are put
    back when anything fails before the commit."""
    done: list[tuple[str, bytes | None, bytes | None]] = []
    try:
        with immediate(ctx.conn):
            result, changes = write()
            for path, before, after in changes:
                _put(ctx, path, before, after)
                done.append((path, before, after))
    except BaseException:
        for path, before, after in reversed(done):
            _put(ctx, path, after, before)
        raise
    return result


def _put(ctx: EditContext, path: str, before: bytes | None, after: bytes | None) -> None:
    target = ctx.vault_file(path)
    if after is None:
        if before is not None:
            remove(target)
    else:
        atomic_write(target, after, new=before is None)


__all__ = ["Done", "PlannedWrite", "UndoRefused", "UnknownCard", "answerable", "get_card", "perform", "preview",
           "undo_last"]
