"""Answer a card (the kind plans, this module performs) and undo the last answer.

An answer that writes files is recorded first: one transaction checks the files again (still as
indexed, a new file still absent) and commits the card's new state and an undo record (each
file's text before, the text to write and its hash), marked pending. Then the files are written
atomically and the mark cleared; if a write fails, the files written are put back and the card
and record are as before. A process killed in between leaves the mark: the next answer, undo or
import (`finish_pending`) writes what is missing, each file only if it still has its text from
before the answer (a later edit is kept), so the vault and the database agree again and the
answer stands as if it had not been interrupted. One answer or undo runs at a time per database
(a lock file; the kernel drops it when a process dies), so a pending mark found while holding
the lock is one a dead process left.

Undo reverses the latest answer not undone yet, in one transaction around its file writes: each
file only if it still has what the answer wrote (else nothing is undone; a file that has its text
from before already, from an undo killed before its commit, is left as it is), then the card's
status, answer and snooze. A knowledge card's answer wrote knowledge while it was planned: what
it changed is recorded with it (store.knowledge_journal) and put back by its undo in the same
transaction (the items it added end, the items it ended or changed are as before), refused when
one of them changed since. Both work across processes: the record is in the database.
"""

from __future__ import annotations

import difflib
import fcntl
import os
from contextlib import contextmanager
from dataclasses import dataclass, field

from mindtui.curation.kinds import Action, EditContext, FileEdit, now_iso
from mindtui.curation.registry import kind_of
from mindtui.curation.vault_edit import EditRefused, NoteChanged, atomic_write, read_bytes, remove, sha256_hex
from mindtui.errors import DatabaseError, InputError, NotFound, OperationFailed
from mindtui.store import curation_store as store
from mindtui.store import knowledge_journal
from mindtui.store.batch import immediate
from mindtui.store.curation_store import CurationItem


class UnknownCard(NotFound):
    """No card with this id."""


class CardClosed(OperationFailed):
    """The card is answered, dismissed or closed already: nothing to answer (undo reopens the latest)."""


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
    """The card and its kind's action; CardClosed for a card that is closed already."""
    item = get_card(conn, item_id)
    action = kind_of(item.kind).action(action_name)
    if item.status not in (store.OPEN, store.SNOOZED):
        raise CardClosed(f"card {item_id} is {item.status} already; `undo` reopens the card answered last")
    return item, action


def perform(ctx: EditContext, item_id: int, action_name: str, args: dict) -> Done:
    with _answer_lock(ctx.conn):
        _finish_pending(ctx)
        item, action = answerable(ctx.conn, item_id, action_name)
        with knowledge_journal.recording(ctx.conn) as knowledge:  # a knowledge card's plan writes knowledge
            plan = kind_of(item.kind).plan(ctx, item, action, args)
        now = now_iso()
        for edit in plan.edits:
            _checked_before(ctx, edit)
        with immediate(ctx.conn):
            if store.get_item(ctx.conn, item_id) != item:
                raise OperationFailed(f"card {item_id} changed meanwhile (answered in another window?); look again")
            # The files again, now that the database is locked for writing.
            changes = [(edit.path, _checked_before(ctx, edit),
                        None if edit.new_text is None else edit.new_text.encode("utf-8")) for edit in plan.edits]
            store.set_item_state(ctx.conn, item_id, plan.status, plan.answer, plan.snoozed_until, now)
            action_id = store.insert_action(ctx.conn, item_id, action.name, args, _records(changes, pending=True),
                                            item, now, pending=bool(changes), knowledge=knowledge)
        if changes:
            _write_answer(ctx, action_id, item, changes, now)
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


def _records(changes: list, pending: bool) -> list[dict]:
    """The undo record's files: the text before and the hash of what is written (and, while the
    answer is pending, that text itself, for finishing it after a kill)."""
    records = []
    for path, before, after in changes:
        record = {"path": path, "before": _text(before), "after_sha256": None if after is None else sha256_hex(after)}
        if pending:
            record["after"] = _text(after)
        records.append(record)
    return records


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8")


def _bytes(text: str | None) -> bytes | None:
    return None if text is None else text.encode("utf-8")


def _write_answer(ctx: EditContext, action_id: int, item: CurationItem, changes: list, now: str) -> None:
    """Write a recorded answer's files, then clear its pending mark; if a write fails, put back the
    files written and the card as it was, and drop the record."""
    written: list = []
    try:
        _put_all(ctx, changes, written)
    except BaseException:
        _put_back(ctx, written)
        with immediate(ctx.conn):
            store.abandon_action(ctx.conn, action_id, item, now)
        raise
    with immediate(ctx.conn):
        store.finish_action(ctx.conn, action_id, _records(changes, pending=False))


def finish_pending(ctx: EditContext) -> list[str]:
    """Finish the answers a killed process recorded but did not write (see the module text); the
    vault paths they name. perform and undo_last run it first; so do the import (it then reads the
    files as the answer left them) and the service (which then imports them)."""
    with _answer_lock(ctx.conn):
        return _finish_pending(ctx)


def _finish_pending(ctx: EditContext) -> list[str]:
    paths = []
    for pending in store.pending_actions(ctx.conn):
        for record in pending.files:
            before = _bytes(record["before"])
            try:
                if read_bytes(ctx.write_file(record["path"])) == before:  # else written already, or edited since
                    _put(ctx, record["path"], before, _bytes(record["after"]))
            except EditRefused:
                continue  # the path leads out of the vault now: the file is left as it is
            paths.append(record["path"])
        with immediate(ctx.conn):
            store.finish_action(ctx.conn, pending.action_id,
                                [{k: v for k, v in record.items() if k != "after"} for record in pending.files])
    return paths


@contextmanager
def _answer_lock(conn):
    """One answer or undo at a time per database file, across processes and threads (flock on a file
    of its own beside the database; released when the file is closed or the process dies).
    Lock order (jobs.lock): taken inside the job lock or alone, and never held while the job lock
    is taken (the service imports an answer's files after this lock is released)."""
    name = conn.filename
    if not name or name == ":memory:":
        yield
        return
    try:
        fd = os.open(name + ".curation-lock", os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise DatabaseError(f"cannot open {name}.curation-lock: {exc.strerror or exc}; an answer needs to write "
                            "beside the database: check the folder's permissions") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def undo_last(ctx: EditContext) -> Done | None:
    """Reverse the latest answer not undone yet; None when there is none."""
    with _answer_lock(ctx.conn):
        _finish_pending(ctx)
        last = store.last_action(ctx.conn)
        if last is None:
            return None
        item = get_card(ctx.conn, last.item_id)
        action = kind_of(item.kind).action(last.action)
        _undo_changes(ctx, last, item)  # refuse before taking the write lock
        now = now_iso()
        knowledge_done: list[str] = []

        def write() -> tuple[int, list]:
            if store.last_action(ctx.conn) != last:
                raise OperationFailed("another answer was given meanwhile; undo again to reverse it first")
            changes = _undo_changes(ctx, last, item)
            if last.knowledge:
                why = knowledge_journal.conflict(ctx.conn, last.knowledge)
                if why:
                    raise UndoRefused(f"`{last.action}` on card {item.item_id} cannot be undone: {why}; nothing was "
                                      "undone (supersede or retract the item instead)")
                knowledge_done[:] = knowledge_journal.put_back(ctx.conn, last.knowledge, item.item_id, now)
            store.set_item_state(ctx.conn, item.item_id, last.prev_status, last.prev_answer, last.prev_snoozed_until,
                                 now)
            store.mark_undone(ctx.conn, last.action_id, now)
            return last.action_id, changes

        _transaction(ctx, write)
    said = f"undid {last.action} on card {item.item_id}" + (f": {', '.join(knowledge_done)}" if knowledge_done else "")
    return Done(store.get_item(ctx.conn, item.item_id), action, said, [record["path"] for record in last.files],
                last.action_id)


def _undo_changes(ctx: EditContext, last: store.CurationAction, item: CurationItem) -> list:
    """[(path, now, before the answer)] for each file, newest first; UndoRefused when one of them
    no longer has what the answer wrote."""
    changes = []
    for record in reversed(last.files):
        current = read_bytes(ctx.write_file(record["path"]))
        before = _bytes(record["before"])
        if current == before:
            continue  # put back already (an undo killed before its commit)
        if (None if current is None else sha256_hex(current)) != record["after_sha256"]:
            raise UndoRefused(f"{record['path']} changed after `{last.action}` on card {item.item_id}; undoing it "
                              "would lose that change, so nothing was undone")
        changes.append((record["path"], current, before))
    return changes


def _checked_before(ctx: EditContext, edit: FileEdit) -> bytes | None:
    """The file's bytes now, which must be what the plan expects (indexed content, or no file)."""
    data = read_bytes(ctx.write_file(edit.path))  # EditRefused here, before anything is written
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
    written: list = []
    try:
        with immediate(ctx.conn):
            result, changes = write()
            _put_all(ctx, changes, written)
    except BaseException:
        _put_back(ctx, written)
        raise
    return result


def _put_all(ctx: EditContext, changes: list, written: list) -> None:
    """Write each (path, before, after); `written` collects those done, for _put_back."""
    for path, before, after in changes:
        _put(ctx, path, before, after)
        written.append((path, before, after))


def _put_back(ctx: EditContext, written: list) -> None:
    for path, before, after in reversed(written):
        _put(ctx, path, after, before)


def _put(ctx: EditContext, path: str, before: bytes | None, after: bytes | None) -> None:
    target = ctx.write_file(path)
    if after is None:
        if before is not None:
            remove(target)
    else:
        atomic_write(target, after, new=before is None)


__all__ = ["CardClosed", "Done", "PlannedWrite", "UndoRefused", "UnknownCard", "answerable", "get_card", "perform", "preview",
           "undo_last"]
