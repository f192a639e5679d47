"""Import a vault into the store: incremental, idempotent and crash-safe.

Order of work (each numbered write is its own transaction, so a kill at any point leaves a
consistent database and the next run finishes the job):
  scan -> decide what changed (size+mtime, then content hash) -> parse changed files ->
  settle note ids -> build the final name index -> (1) delete vanished notes ->
  (2) rewrite each changed note -> (3) re-resolve references of unchanged notes whose targets
  changed -> (4) record the parser fingerprint.
The final name index is known before anything is written, so a note's links resolve the
same whether its targets were written before or after it.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import apsw

from mindtui.graph.derive import reference_edges, structure_edges
from mindtui.store import edges as edge_store
from mindtui.store import fulltext
from mindtui.store import notes as note_store
from mindtui.store.meta import get_meta, set_meta
from mindtui.vault.markdown import NotMarkdownError
from mindtui.vault.note_builder import (
    PARSER_VERSION, NoteRows, ParsedFile, build_rows, parse_file, path_note_id, resolve_links, sha256_hex,
)
from mindtui.vault.resolve import NameIndex
from mindtui.vault.scan import ImportWarning, VaultFile, scan_vault
from mindtui.vault.types import TypeRegistry

Progress = Callable[[int, int, str], None]  # (done, total, current path)
FINGERPRINT_KEY = "import_fingerprint"


@dataclass
class ImportReport:
    notes_total: int = 0
    notes_added: int = 0
    notes_changed: int = 0
    notes_deleted: int = 0
    notes_unchanged: int = 0
    notes_renamed: int = 0
    notes_relinked: int = 0  # unchanged notes whose links now resolve differently
    chunks_total: int = 0
    explicit_total: int = 0
    wikilink_total: int = 0
    inline_total: int = 0
    callout_total: int = 0
    frontmatter_total: int = 0
    defaults_total: int = 0
    structure_total: int = 0
    unresolved_total: int = 0
    missing_total: int = 0
    ambiguous_total: int = 0
    out_of_corpus_total: int = 0
    attachment_links_total: int = 0
    files_skipped: int = 0
    seconds: float = 0.0
    warnings: list[ImportWarning] = field(default_factory=list)

    def as_dict(self) -> dict:
        data = {k: v for k, v in self.__dict__.items() if k != "warnings"}
        data["seconds"] = round(self.seconds, 3)
        data["warnings"] = [w.as_dict() for w in self.warnings]
        return data


def import_fingerprint(registry: TypeRegistry) -> str:
    return f"parser={PARSER_VERSION};analyzer={fulltext.ANALYZER_VERSION};types={registry.fingerprint}"


class VaultImporter:
    def __init__(self, conn: apsw.Connection, vault: Path, registry: TypeRegistry, *,
                 exclude: list[str] | None = None, max_file_bytes: int = 2_000_000,
                 follow_symlinks: bool = True, progress: Progress | None = None) -> None:
        self.conn = conn
        self.vault = Path(vault)
        self.registry = registry
        self.exclude = list(exclude or [])
        self.max_file_bytes = max_file_bytes
        self.follow_symlinks = follow_symlinks
        self.progress = progress or (lambda done, total, path: None)
        self.report = ImportReport()

    # -- deciding what changed -------------------------------------------------------------
    def _read(self, file: VaultFile) -> bytes | None:
        try:
            return file.abs_path.read_bytes()
        except OSError as exc:
            self.report.warnings.append(ImportWarning(file.path, f"cannot read: {exc.strerror or exc}"))
            return None

    def _parse(self, file: VaultFile, data: bytes, out_of_corpus: dict[str, str]) -> ParsedFile | None:
        try:
            return parse_file(file.path, data, file.size, file.mtime_ns, self.registry)
        except NotMarkdownError as exc:
            self.report.warnings.append(ImportWarning(file.path, str(exc)))
            out_of_corpus[file.path] = "binary file"
            return None

    def run(self) -> ImportReport:
        started = time.monotonic()
        scan = scan_vault(self.vault, exclude=self.exclude, max_file_bytes=self.max_file_bytes,
                          follow_symlinks=self.follow_symlinks)
        self.report.warnings.extend(scan.warnings)
        states = note_store.load_note_states(self.conn)
        fingerprint = import_fingerprint(self.registry)
        force = get_meta(self.conn, FINGERPRINT_KEY) != fingerprint

        parsed: dict[str, ParsedFile] = {}
        unchanged: dict[str, note_store.NoteState] = {}
        touched: list[tuple[note_store.NoteState, VaultFile]] = []
        unreadable: set[str] = set()
        files = {f.path: f for f in scan.files}
        for file in scan.files:
            state = states.get(file.path)
            if not force and state and (state.size, state.mtime_ns) == (file.size, file.mtime_ns):
                unchanged[file.path] = state
                continue
            data = self._read(file)
            if data is None:
                if state:  # keep what we had rather than lose the note
                    unchanged[file.path] = state
                unreadable.add(file.path)
                continue
            if not force and state and state.content_hash == sha256_hex(data):
                unchanged[file.path] = state
                touched.append((state, file))
                continue
            item = self._parse(file, data, scan.out_of_corpus)
            if item is not None:
                parsed[file.path] = item
        self.report.files_skipped = len(scan.out_of_corpus) + len(unreadable)

        ids = self._settle_ids(parsed, unchanged, files, scan.out_of_corpus)
        names = self._name_index(parsed, unchanged, ids, scan.out_of_corpus, scan.attachments)

        present = set(parsed) | set(unchanged)
        vanished = [s for p, s in states.items() if p not in present]
        self._count_changes(parsed, states, vanished)
        for state in vanished:
            with self.conn:
                note_store.delete_note(self.conn, state.note_id)
        if touched:
            with self.conn:
                for state, file in touched:
                    note_store.touch_note(self.conn, state.note_id, file.size, file.mtime_ns)

        total = len(parsed)
        for done, path in enumerate(sorted(parsed), start=1):
            self.progress(done, total, path)
            self._write_note(parsed[path], ids[path], names)
        self._relink(names, skip={ids[p] for p in parsed})
        with self.conn:
            set_meta(self.conn, FINGERPRINT_KEY, fingerprint)

        self._totals()
        self.report.seconds = time.monotonic() - started
        return self.report

    def _count_changes(self, parsed: dict[str, ParsedFile], states: dict, vanished: list) -> None:
        added = [p for p in parsed if p not in states]
        self.report.notes_added = len(added)
        self.report.notes_changed = len(parsed) - len(added)
        self.report.notes_deleted = len(vanished)
        self.report.notes_unchanged = sum(1 for p in states if p not in parsed) - len(vanished)
        gone_ids = {s.declared_id for s in vanished if s.declared_id}
        gone_hashes = {s.content_hash for s in vanished}
        self.report.notes_renamed = sum(
            1 for p in added if (parsed[p].declared_id and parsed[p].declared_id in gone_ids)
            or parsed[p].content_hash in gone_hashes
        )

    # -- note ids --------------------------------------------------------------------------
    def _settle_ids(self, parsed: dict[str, ParsedFile], unchanged: dict[str, note_store.NoteState],
                    files: dict[str, VaultFile], out_of_corpus: dict[str, str]) -> dict[str, str]:
        """A frontmatter id belongs to the first path (in sort order) that declares it; others
        fall back to a path id with a warning. Same answer for a clean and an incremental run."""
        declared = {p: f.declared_id for p, f in parsed.items()}
        declared.update({p: s.declared_id for p, s in unchanged.items()})
        claims: dict[str, list[str]] = defaultdict(list)
        for path in sorted(declared):
            if declared[path]:
                claims[declared[path]].append(path)
        ids: dict[str, str] = {}
        for path, value in declared.items():
            owners = claims.get(value or "", [])
            if value and owners[0] == path:
                ids[path] = value
            else:
                ids[path] = path_note_id(path)
                if value:
                    self.report.warnings.append(ImportWarning(
                        path, f"duplicate frontmatter id {value!r} (also in {owners[0]}); using a path-based id"))
        # An unchanged note whose id changed (it lost or won a claim) must be rewritten.
        for path, state in list(unchanged.items()):
            if ids[path] != state.note_id:
                data = self._read(files[path])
                item = self._parse(files[path], data, out_of_corpus) if data is not None else None
                if item is not None:
                    parsed[path] = item
                    del unchanged[path]
        return ids

    def _name_index(self, parsed, unchanged, ids, out_of_corpus, attachments) -> NameIndex:
        names = NameIndex()
        for path, item in parsed.items():
            names.add_note(ids[path], path, item.aliases)
        for path, state in unchanged.items():
            names.add_note(ids[path], path, state.aliases)
        for path, reason in out_of_corpus.items():
            names.add_outside(path, reason)
        for path in attachments:
            names.add_attachment(path)
        return names

    # -- writing ---------------------------------------------------------------------------
    def _write_note(self, item: ParsedFile, note_id: str, names: NameIndex) -> None:
        rows: NoteRows = build_rows(item, note_id, self.registry, names)
        note = rows.note
        resolved = [l for l in rows.links if l.resolution == "resolved"]
        edges = reference_edges(note_id, note.type, self.registry.note_type(note.type).edge_defaults, resolved)
        edges += structure_edges(note_id, [c.chunk_key for c in rows.chunks])
        with self.conn:  # one transaction per note: old rows out, new rows in
            note_store.delete_note_at_path(self.conn, item.path)
            note_store.delete_note(self.conn, note_id)
            note_store.insert_note(self.conn, note)
            note_store.insert_chunks(self.conn, note_id, rows.chunks)
            note_store.insert_links(self.conn, note_id, rows.links)
            edge_store.insert_edges(self.conn, edges)

    def _relink(self, names: NameIndex, skip: set[str]) -> None:
        """Re-resolve the references of notes not rewritten in this run; rewrite the edges of
        those whose targets changed (a target appeared, vanished, or became ambiguous)."""
        types = note_store.note_types(self.conn)
        for note_id, links in note_store.load_links(self.conn).items():
            if note_id in skip or note_id not in types:
                continue
            note_type, path = types[note_id]
            fresh = resolve_links(links, note_id, path, names)
            if all((a.resolution, a.resolved_note_id, a.detail) == (b.resolution, b.resolved_note_id, b.detail)
                   for a, b in zip(links, fresh)):
                continue
            resolved = [l for l in fresh if l.resolution == "resolved"]
            edges = reference_edges(note_id, note_type, self.registry.note_type(note_type).edge_defaults, resolved)
            with self.conn:
                note_store.update_link_resolutions(self.conn, note_id, fresh)
                edge_store.delete_reference_edges(self.conn, note_id)
                edge_store.insert_edges(self.conn, edges)
            self.report.notes_relinked += 1

    def _totals(self) -> None:
        counts = {**note_store.corpus_counts(self.conn), **edge_store.edge_counts(self.conn)}
        for key, value in counts.items():
            setattr(self.report, key, value)
        self.report.warnings.extend(ImportWarning(p, r) for p, r in note_store.stored_warnings(self.conn))
