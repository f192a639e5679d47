"""Which unchanged notes' links an import must resolve again, and resolving them: only those naming what changed.

A link's resolution depends on the notes whose file name (or path suffix) or alias matches its
target's last path part, on the vault's attachments and on its markdown files that are not
indexed. So after an import that added, changed, renamed or deleted a few notes, only links whose
target ends in one of those notes' names or aliases can resolve differently; every other link
would resolve to what it has. Re-resolving those few instead of the vault's every link is what
makes a live-vault run take a fraction of a second on 6,500 notes (the whole relink took ~1 s).

Everything is resolved again when the attachments or the non-indexed notes changed (their
digest is kept in meta), and when an earlier import stopped between writing notes and relinking
(a marker set before the first note is written, cleared after the relink): the next run does not
know which names that one changed.
"""

from __future__ import annotations

import hashlib
from typing import Iterable

import apsw

from mindtui.progress import CancelToken
from mindtui.store import edges as edge_store
from mindtui.store import notes as note_store
from mindtui.store.anchors import link_notes
from mindtui.store.batch import WriteBatches, write_batches
from mindtui.store.meta import get_meta, set_meta
from mindtui.vault.edges import reference_edges
from mindtui.vault.note_builder import resolve_links
from mindtui.vault.report import ImportReport
from mindtui.vault.resolve import NameIndex, fold, stem_key
from mindtui.vault.types import TypeRegistry

# meta: a digest of the vault's attachments and non-indexed notes as the last relink saw them.
OUTSIDE_NAMES_KEY = "relink_outside_names"
# meta: "1" while an import has written notes it has not relinked for yet.
RELINK_PENDING_KEY = "relink_pending"
RELINK_PAGE = 500  # unchanged notes whose references are read and resolved again at a time
_ANY_NAME = {"", ".", ".."}  # a target ending so could name any note (`[[..]]` from a folder)


def last_part(name: str) -> str:
    """The part of a link target or note path that every matching rule compares ('a/B.md' -> 'b')."""
    return stem_key(name).rpartition("/")[2]


def names_of(path: str, aliases: Iterable[str]) -> set[str]:
    """The last parts a note can be reached or named by: its file name and its aliases."""
    found = {last_part(path)}
    for alias in aliases:
        if alias and alias.strip():
            found.add(fold(alias.strip()).rpartition("/")[2])
            found.add(last_part(alias))
    return found


def outside_digest(out_of_corpus: dict[str, str], attachments: Iterable[str]) -> str:
    text = "\n".join(sorted(f"{path}\t{reason}" for path, reason in out_of_corpus.items()))
    text += "\n\n" + "\n".join(sorted(attachments))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def names_outside_changed(conn: apsw.Connection, digest: str) -> bool:
    """Whether every link must be resolved again (see the module docstring)."""
    return get_meta(conn, OUTSIDE_NAMES_KEY) != digest or bool(get_meta(conn, RELINK_PENDING_KEY))


def mark_pending(conn: apsw.Connection) -> None:
    set_meta(conn, RELINK_PENDING_KEY, "1")


def mark_done(conn: apsw.Connection, digest: str) -> None:
    set_meta(conn, RELINK_PENDING_KEY, "")
    set_meta(conn, OUTSIDE_NAMES_KEY, digest)


def notes_to_relink(targets: Iterable[tuple[str, str]], names: set[str] | None) -> set[str] | None:
    """The ids of notes with a link whose target may name one of `names` (None: all notes).
    targets: (note id, link target path) of every link."""
    if names is None:
        return None
    found: set[str] = set()
    parts: dict[str, str] = {}  # a vault's links name far fewer targets than they are (540k links, 100k notes)
    for note_id, target in targets:
        part = parts.get(target)
        if part is None:
            part = parts[target] = last_part(target)
        if part in names or part in _ANY_NAME:
            found.add(note_id)
    return found


def relink_notes(conn: apsw.Connection, registry: TypeRegistry, names: NameIndex, *, skip: set[str],
                 changed_names: set[str] | None, cancel: CancelToken, report: ImportReport,
                 anchored: set[str] | None) -> None:
    """Re-resolve the references of notes not rewritten in this run (of all, or of those naming
    `changed_names`), a page of notes at a time; rewrite the edges of those whose targets
    changed (a target appeared, vanished, or became ambiguous). Every note their links name
    (store.anchors.link_notes), before and after, joins `anchored` (the notes whose anchor rows the
    import refreshes; None: all)."""
    if changed_names is not None and not changed_names:
        return  # nothing was written or deleted: every reference resolves as it did
    types = note_store.note_types(conn)
    wanted = notes_to_relink(note_store.link_targets(conn), changed_names)
    pending = sorted((set(types) if wanted is None else wanted & types.keys()) - skip)
    with write_batches(conn, cancel=cancel) as batches:
        for start in range(0, len(pending), RELINK_PAGE):
            page = note_store.links_of(conn, pending[start:start + RELINK_PAGE])
            for note_id, links in sorted(page.items()):
                report.notes_relink_checked += 1
                note_type, path = types[note_id]
                if _relink_note(conn, registry, batches, note_id, note_type, path, links, names, anchored):
                    report.notes_relinked += 1


def _relink_note(conn: apsw.Connection, registry: TypeRegistry, batches: WriteBatches, note_id: str,
                 note_type: str, path: str, links: list[note_store.LinkRecord], names: NameIndex,
                 anchored: set[str] | None) -> bool:
    """Whether the note's references resolve differently now (then they and its edges are rewritten)."""
    fresh = resolve_links(links, note_id, path, names)
    if all((a.resolution, a.resolved_note_id, a.detail, a.candidates, a.fallback)
           == (b.resolution, b.resolved_note_id, b.detail, b.candidates, b.fallback) for a, b in zip(links, fresh)):
        return False
    resolved = [l for l in fresh if l.resolution == "resolved"]
    edges = reference_edges(note_id, note_type, registry.note_type(note_type).edge_defaults, resolved)
    if anchored is not None:
        anchored |= {target for l in links + fresh for target in link_notes(l) if target}
    batches.ensure_open()
    note_store.update_link_resolutions(conn, note_id, fresh)
    edge_store.delete_reference_edges(conn, note_id)
    edge_store.insert_edges(conn, edges)
    batches.item_done()
    return True
