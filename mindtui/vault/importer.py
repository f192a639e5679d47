"""Import a vault into the store: incremental, idempotent and crash-safe, in bounded memory.

Order of work:
  scan -> decide what changed (size+mtime, then content hash) -> read each changed file's head
  (hash, frontmatter id and aliases: no markdown parse) -> keep notes under folders that could
  not be read -> match renames -> check the mass-delete guard -> settle note ids -> build the
  final name index -> (1) parse and write the changed notes, a batch at a time (from
  parallel_notes.PARALLEL_MIN_FILES files on, parsed and built on worker processes while the
  batches before are written: vault.parallel_notes; a time budget
  may stop this: the files not reached stay as they are, deletions wait, and the run stops with
  Cancelled; into an empty store, without the secondary indexes: store.deferred_indexes) ->
  (2) delete vanished notes -> (3) re-resolve references of unchanged notes whose
  targets changed, a page at a time -> (4) privacy flags, anchor rows.
Each note records the fingerprint of the code that wrote it (parser, analyzer, type registry):
a note written under another one is parsed again, so a new parser re-reads the vault and an
interrupted import resumes with the notes it had not written yet.
Each note's rows are replaced as one unit; units are grouped into short transactions
(`store.batch`), so a kill at any point leaves a consistent database and the next run ends
where one clean run would. The final name index is known before anything is written, so a
note's links resolve the same whether its targets were written before or after it, in its
batch or another. What a run holds is its notes' heads and names (~1 KB a note), never their
parsed text: a 100k-note vault imports in the memory of a small one.

A renamed note keeps its note_id (see `renames`), as does a changed note at the same path;
what only the database holds hangs on that id.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Iterable, Iterator

import apsw

from mindtui.config import Settings
from mindtui.errors import Cancelled, MassDeleteRefused
from mindtui.progress import NEVER_CANCELLED, CancelToken, Progress, no_progress
from mindtui.store import anchors as anchor_store
from mindtui.store import deferred_indexes
from mindtui.store import edges as edge_store
from mindtui.store import former_paths
from mindtui.store import notes as note_store
from mindtui.store import usage_store
from mindtui.store.batch import WriteBatches, immediate, page_cache, wal_checkpoints_every, write_batches
from mindtui.store.identity import move_note_data
from mindtui.store.meta import VAULT_KEY, set_meta
from mindtui.text.globs import excluded_by
from mindtui.vault.edges import reference_edges
from mindtui.vault.links import anchor_text
from mindtui.vault.markdown import NotMarkdownError
from mindtui.vault.note_builder import FileHead, NoteRows, import_fingerprint, read_head, sha256_hex
from mindtui.vault.note_reader import Built, NoteReader, NoteTask
from mindtui.vault import parallel_notes
from mindtui.vault.note_ids import settle_ids
from mindtui.vault import relink
from mindtui.vault import run_totals
from mindtui.vault.renames import match_renames
from mindtui.vault.report import ImportReport
from mindtui.vault.resolve import NameIndex
from mindtui.vault.scan import ImportWarning, VaultFile, scan_vault, under_any
from mindtui.vault.types import TypeRegistry


__all__ = ["VaultImporter", "ImportReport"]

BATCH_NOTES = 200  # changed files parsed, then written, at a time: what one run holds in memory at most
CACHE_MIB = 256  # SQLite's page cache while notes are written (see store.batch.page_cache)
WAL_PAGES = 16384  # pages between WAL checkpoints while notes are written (store.batch.wal_checkpoints_every)


class VaultImporter:
    def __init__(self, conn: apsw.Connection, vault: Path, registry: TypeRegistry, settings: Settings, *,
                 progress: Progress | None = None, cancel: CancelToken | None = None,
                 allow_mass_delete: bool = False, reading_spent: Callable[[int], bool] | None = None,
                 batch_notes: int = BATCH_NOTES) -> None:
        self.conn = conn
        self.vault = Path(vault)
        self.registry = registry
        self.options = settings.import_
        self.private_paths = settings.privacy.private_paths
        self.progress = progress or no_progress
        self.cancel = cancel or NEVER_CANCELLED
        self.allow_mass_delete = allow_mass_delete
        # (files parsed so far) -> whether to stop reading: a time budget (jobs.ImportBudget).
        self.reading_spent = reading_spent or (lambda parsed: False)
        self.batch_notes = batch_notes
        self.workers = parallel_notes.WORKERS
        self.reader = NoteReader(registry, self.options.max_file_bytes, self.private_paths)
        self.report = ImportReport()
        self._anchored: set[str] | None = None  # the notes whose anchor rows this run refreshes (None: all)

    def _warn(self, path: str, reason: str) -> None:
        self.report.warnings.append(ImportWarning(path, reason))

    # -- deciding what changed -------------------------------------------------------------
    def _read(self, file: VaultFile) -> bytes | None:
        data = self.reader.read(file)
        self.report.warnings.extend(self.reader.take_warnings())
        return data

    def _head(self, file: VaultFile, data: bytes, out_of_corpus: dict[str, str]) -> FileHead | None:
        """The changed file's head; None for a binary file (left out)."""
        try:
            return read_head(file.path, data, file.size, file.mtime_ns)
        except NotMarkdownError as exc:
            self._warn(file.path, str(exc))
            out_of_corpus[file.path] = "binary file"
            return None

    def run(self) -> ImportReport:
        """Two passes over the changed files. The first reads each one's head (bytes hashed,
        frontmatter only): enough to match renames, settle note ids and know every name a link
        can use. The second parses and writes them, BATCH_NOTES at a time, holding no more than
        one batch: memory stays bounded whatever the vault's size, and each link is resolved
        once, when its note is written, against the whole vault's final names."""
        started = time.monotonic()
        deferred_indexes.restore(self.conn)  # a cold import killed while they were dropped
        scan = scan_vault(self.vault, exclude=self.options.exclude, max_file_bytes=self.options.max_file_bytes,
                          follow_external_symlinks=self.options.follow_external_symlinks)
        self.report.warnings.extend(scan.warnings)
        states = note_store.load_note_states(self.conn)
        self._states_by_path, self._state_ids = states, {state.note_id for state in states.values()}
        fingerprint = import_fingerprint(self.registry)

        heads: dict[str, FileHead] = {}
        unchanged: dict[str, note_store.NoteState] = {}
        touched: list[tuple[note_store.NoteState, VaultFile]] = []
        unreadable: set[str] = set()
        kept: dict[str, note_store.NoteState] = {}  # cannot be read now: kept as they were, ids included
        files = {f.path: f for f in scan.files}
        for file in scan.files:
            state = states.get(file.path)
            current = state is not None and state.parsed_with == fingerprint
            if current and (state.size, state.mtime_ns) == (file.size, file.mtime_ns):
                unchanged[file.path] = state
                continue
            data = self._read(file)
            if data is None:
                if state:  # keep what we had rather than lose the note
                    kept[file.path] = state
                unreadable.add(file.path)
                continue
            if current and state.content_hash == sha256_hex(data):
                unchanged[file.path] = state
                touched.append((state, file))
                continue
            head = self._head(file, data, scan.out_of_corpus)
            if head is not None:
                heads[file.path] = head
        self.report.files_skipped = len(scan.out_of_corpus) + len(unreadable)

        # A folder that could not be listed (or an unmounted link target) keeps its notes.
        kept.update({p: s for p, s in states.items() if p not in files and under_any(p, scan.unlisted)})
        for prefix in sorted(scan.unlisted):
            count = sum(1 for p in kept if under_any(p, {prefix}))
            if count:
                self._warn(prefix, f"{count} indexed note(s) kept as they were: this cannot be read now")
        present = set(heads) | set(unchanged) | set(kept)
        vanished = [s for p, s in sorted(states.items()) if p not in present]
        renames = self._renames(heads, states, vanished, files)
        sources = {id(state) for state in renames.values()}
        vanished = [s for s in vanished if id(s) not in sources]
        refused = self._mass_delete_check(vanished, len(states), len(files))
        if refused:
            kept.update({s.path: s for s in vanished})
            vanished = []

        ids = self._settle_ids(heads, unchanged, kept, renames, states, files, scan.out_of_corpus)
        self._count_changes(heads, states, vanished, renames)
        final_ids = set(ids.values())
        digest = relink.outside_digest(scan.out_of_corpus, scan.attachments)
        changed_names = None if relink.names_outside_changed(self.conn, digest) else self._changed_names(
            heads, vanished, renames, states)
        # Unused by a run that changes nothing (a NameIndex of 100k notes takes a second to build).
        names = self._name_index(_named(heads, {**unchanged, **kept}, ids), scan.out_of_corpus, scan.attachments) \
            if heads or vanished or changed_names is None else NameIndex()
        if heads or vanished:
            with immediate(self.conn):  # a kill before the relink: the next run relinks every note
                relink.mark_pending(self.conn)
        written = {ids[p] for p in heads}
        # The notes whose anchor rows may change: those written or deleted, what the deleted ones'
        # references resolved to (here), the targets of a rewritten note whose lines in them
        # changed (_anchor_changes) and the relinked notes' targets (relink_notes).
        if changed_names is None:
            self._anchored = None
        else:
            gone = {s.note_id for s in vanished}
            before = gone | {
                previous.note_id for p in heads if (previous := states.get(p) or renames.get(p)) is not None}
            self._anchored = written | before | anchor_store.given_targets(self.conn, gone)

        with page_cache(self.conn, CACHE_MIB), wal_checkpoints_every(self.conn, WAL_PAGES), \
                deferred_indexes.deferred(self.conn, enabled=bool(heads) and not states), \
                write_batches(self.conn, cancel=self.cancel) as batches:
            if touched:
                batches.ensure_open()
                for state, file in touched:
                    note_store.touch_note(self.conn, state.note_id, file.size, file.mtime_ns)
                batches.item_done()
            not_written, cut_short = self._write_notes(batches, heads, files, ids, final_ids, names,
                                                      states, renames)
            # Deletions wait for the run that writes every changed note (a time budget may stop this
            # one); a vanished note whose id a written note took went with that note's old rows.
            for state in [] if cut_short else [s for s in vanished if s.note_id not in final_ids]:
                batches.ensure_open()
                note_store.delete_note(self.conn, state.note_id)
                usage_store.forget_note_opens(self.conn, [state.note_id])  # what was learnt about it goes too
                batches.item_done()
        if cut_short:  # links, anchors and cards: the run that writes the rest (relink.mark_pending)
            raise Cancelled("the import's time budget is spent; what it wrote is kept, the next run goes on")
        relinked_before = self.report.notes_relinked
        if not_written:  # links were resolved against names that include these: every note again
            names = self._name_index(note_store.note_names(self.conn), scan.out_of_corpus, scan.attachments)
            changed_names, self._anchored = None, None
            written = set()
        relink.relink_notes(self.conn, self.registry, names, skip=written, changed_names=changed_names,
                            cancel=self.cancel, report=self.report, anchored=self._anchored)
        with immediate(self.conn):
            relink.mark_done(self.conn, digest)
            former_paths.prune(self.conn)
            privacy_changed = run_totals.apply_private_paths(self.conn, self.private_paths)
            run_totals.store_edge_defaults(self.conn, self.registry)
            if heads or vanished or privacy_changed or self.report.notes_relinked > relinked_before:
                anchor_store.refresh(self.conn, anchor_text, None if privacy_changed else self._anchored)
            set_meta(self.conn, VAULT_KEY, str(self.vault.resolve()))

        run_totals.store_totals(self.conn, self.report,
                                wrote=bool(heads or vanished or privacy_changed) or self.report.notes_relinked > relinked_before)
        self.report.seconds = time.monotonic() - started
        if refused:
            raise MassDeleteRefused(refused, self.report)
        return self.report

    def _write_notes(self, batches: WriteBatches, heads: dict[str, FileHead], files: dict[str, VaultFile],
                     ids: dict[str, str], final_ids: set[str], names: NameIndex, states: dict,
                     renames: dict) -> tuple[list[str], bool]:
        """Parse and write the changed files, BATCH_NOTES at a time (parsed outside the write
        transaction, on other cores for many: vault.parallel_notes; released once written).
        Returns (the paths not written: they could not be read or parsed now, or changed since
        their head was read, whether the time budget stopped the writing)."""
        paths = sorted(heads)
        tasks = []
        for path in paths:
            previous = states.get(path) or renames.get(path)
            if previous is not None and previous.note_id in final_ids and previous.note_id != ids[path]:
                previous = None  # its old id belongs to another note now: nothing to move
            tasks.append(NoteTask(files[path], heads[path].content_hash, ids[path], previous, states.get(path)))
        tasks_of = {task.file.path: task for task in tasks}
        batched = [tasks[start:start + self.batch_notes] for start in range(0, len(tasks), self.batch_notes)]
        workers = self.workers if len(tasks) >= parallel_notes.PARALLEL_MIN_FILES else 0
        not_written: list[str] = []
        done = 0
        results = parallel_notes.built_batches(self.reader, names, batched, workers)
        try:
            for built in results:
                ready, notes = [], iter(built)
                while True:
                    if self.reading_spent(done + len(ready) + len(not_written)):  # before the next file is parsed
                        done = self._write_batch(batches, ready, tasks_of, done, len(paths))
                        return not_written, True
                    note = next(notes, None)
                    if note is None:
                        break
                    self.report.warnings.extend(note.warnings)
                    if note.written:
                        ready.append(note)
                    else:
                        not_written.append(note.path)
                done = self._write_batch(batches, ready, tasks_of, done, len(paths))
                if batches.in_transaction:
                    batches.commit()  # no write lock held while the next batch is built
        finally:
            results.close()  # stops the workers when the budget or a cancel ends the writing
        return not_written, False

    def _write_batch(self, batches: WriteBatches, built: list[Built], tasks_of: dict[str, NoteTask], done: int,
                     total: int) -> int:
        """Write a batch's built notes (each its rows replaced as one unit)."""
        for note in built:
            batches.ensure_open()
            if note.rows is not None:
                task = tasks_of[note.path]
                self._write_note(note.path, note.rows, task.note_id, task.previous)
            batches.item_done()
            done += 1
            self.progress(done, total, note.path)
        return done

    def _renames(self, heads: dict[str, FileHead], states: dict, vanished: list, files: dict[str, VaultFile]) -> dict:
        added = {p: (head.content_hash, head.declared_id) for p, head in heads.items() if p not in states}
        if not added or not vanished:
            return {}
        old_texts = note_store.note_bodies(self.conn, [v.note_id for v in vanished])
        renames, notices = match_renames(added, vanished, old_texts, self.options.rename_min_overlap,
                                         lambda path: self._body_text(files[path]))
        for notice in notices:
            self._warn(".", notice)
        return renames

    def _body_text(self, file: VaultFile) -> str:
        """A new file's text as its note would hold it, to compare with a vanished note's."""
        item = self.reader.parse(file, self._states_by_path.get(file.path))
        self.reader.take_warnings()  # said when the file is written
        return "\n".join(item.parsed.lines) if item is not None else ""

    def _mass_delete_check(self, vanished: list, indexed: int, on_disk: int) -> str | None:
        """The reason deletions are refused, or None. An empty vault (nothing on disk) is never
        taken as the truth; otherwise more than max_delete_fraction of the notes (and at least
        mass_delete_min) is refused unless allowed."""
        if not vanished or self.allow_mass_delete:
            return None
        fraction = len(vanished) / max(indexed, 1)
        if on_disk == 0:
            why = "the vault folder holds no notes now (an unmounted disk?)"
        elif fraction > self.options.max_delete_fraction and len(vanished) >= self.options.mass_delete_min:
            why = (f"that is {fraction:.0%} of the notes, more than import.max_delete_fraction "
                   f"{self.options.max_delete_fraction:.0%}")
        else:
            return None
        example = ", ".join(s.path for s in vanished[:3])
        return (f"refusing to delete {len(vanished)} of {indexed} notes ({example}{', ...' if len(vanished) > 3 else ''}):"
                f" {why}. Nothing was deleted; other changes were imported. If the notes are really gone, run"
                " the import again with --allow-mass-delete")

    def _count_changes(self, parsed: dict[str, FileHead], states: dict, vanished: list, renames: dict) -> None:
        added = [p for p in parsed if p not in states]
        self.report.notes_added = len(added) - len(renames)
        self.report.notes_renamed = len(renames)
        self.report.notes_changed = len(parsed) - len(added)
        self.report.notes_deleted = len(vanished)
        self.report.notes_unchanged = sum(1 for p in states if p not in parsed) - len(vanished) - len(renames)

    # -- note ids --------------------------------------------------------------------------
    def _settle_ids(self, heads: dict[str, FileHead], unchanged: dict[str, note_store.NoteState],
                    kept: dict[str, note_store.NoteState], renames: dict, states: dict,
                    files: dict[str, VaultFile], out_of_corpus: dict[str, str]) -> dict[str, str]:
        """The note ids (vault/note_ids.settle_ids says by which rules). An unchanged note whose id
        changed is read again (it is rewritten under the new id)."""
        declared = {p: f.declared_id for p, f in heads.items()}
        declared.update({p: s.declared_id for p, s in unchanged.items()})
        hidden = {p: f.hidden_by_flags or excluded_by(p, self.private_paths) is not None
                  for p, f in [*heads.items(), *unchanged.items()]}
        previous = {p: getattr(states.get(p) or renames.get(p), "note_id", None) for p in declared}
        ids = settle_ids({path: state.note_id for path, state in kept.items()}, declared, hidden, previous,
                         self._warn)
        for path, state in list(unchanged.items()):
            if ids[path] != state.note_id:
                data = self._read(files[path])
                head = self._head(files[path], data, out_of_corpus) if data is not None else None
                if head is not None:
                    heads[path] = head
                    del unchanged[path]
        return ids

    def _name_index(self, notes: Iterable[tuple[str, str, list[str]]], out_of_corpus: dict[str, str],
                    attachments: set[str]) -> NameIndex:
        """notes: (note id, path, aliases) of every note the run ends with."""
        names = NameIndex()
        for note_id, path, aliases in notes:
            names.add_note(note_id, path, aliases)
        for path, reason in out_of_corpus.items():
            names.add_outside(path, reason)
        for path in attachments:
            names.add_attachment(path)
        return names

    # -- writing ---------------------------------------------------------------------------
    def _write_note(self, path: str, rows: NoteRows, note_id: str, previous: note_store.NoteState | None) -> None:
        """Replace the note's rows (inside the caller's transaction)."""
        note = rows.note
        resolved = [l for l in rows.links if l.resolution == "resolved"]
        edges = reference_edges(note_id, note.type, self.registry.note_type(note.type).edge_defaults, resolved)
        # A delete that finds nothing still costs ~70 us as a transaction's first write: a cold
        # import of 6,500 notes spent 1.5-3 s on them. Paths and final ids are each written once per
        # run, so only rows that existed when the run began can be in the way.
        kept = edge_store.owned_signal_edges(self.conn, note_id) if note_id in self._state_ids else []
        self._anchor_changes(rows, note_id, previous)
        if path in self._states_by_path:
            note_store.delete_note_at_path(self.conn, path)
        if previous is not None and previous.note_id != note_id:
            note_store.delete_note(self.conn, previous.note_id)
            move_note_data(self.conn, previous.note_id, note_id)
        if note_id in self._state_ids:
            note_store.delete_note(self.conn, note_id)
        note_store.insert_note(self.conn, note)
        note_store.insert_chunks(self.conn, note_id, rows.chunks)
        note_store.insert_links(self.conn, note_id, rows.links)
        edge_store.insert_edges(self.conn, edges + kept)
        if previous is not None and previous.path != path:  # a rename: links may still name the old path
            former_paths.remember(self.conn, previous.path, note_id, previous.note_id)

    def _anchor_changes(self, rows: NoteRows, note_id: str, previous: note_store.NoteState | None) -> None:
        """Before a note's old rows go: the notes whose anchor rows its rewrite may change (its
        targets, before and after) join `_anchored`, unless the lines it gives them stay the same
        (most edits: a touched note linking a hub does not make the hub's every line read again)."""
        if self._anchored is None:
            return
        note = rows.note
        lines = anchor_store.given_lines(note_id, rows.links)
        fresh = (note.path, lines) if not note.private and note.ai_processing else None
        olds = [anchor_store.outgoing_lines(self.conn, old_id) for old_id in
                {note_id, previous.note_id if previous else note_id} & self._state_ids]
        if olds == [fresh] or (not olds and fresh is None):
            return
        for given in [fresh, *olds]:
            self._anchored |= {target for _, target, _, _ in given[1]} if given else set()

    def _changed_names(self, parsed: dict[str, FileHead], vanished: list, renames: dict,
                       states: dict[str, note_store.NoteState]) -> set[str]:
        """The names (file names, aliases, before and after) of every note this run writes or deletes."""
        names: set[str] = set()
        for path, item in parsed.items():
            names |= relink.names_of(path, item.aliases)
            before = states.get(path) or renames.get(path)
            if before is not None:
                names |= relink.names_of(before.path, before.aliases)
        for state in vanished:
            names |= relink.names_of(state.path, state.aliases)
        return names


def _named(heads: dict[str, FileHead], stored: dict[str, note_store.NoteState],
           ids: dict[str, str]) -> Iterator[tuple[str, str, list[str]]]:
    for path, head in heads.items():
        yield ids[path], path, head.aliases
    for path, state in stored.items():
        yield ids[path], path, state.aliases
