"""A changed file read, parsed and built into its note's rows: what the importer does for each
note before it writes it, the same in the importer's process and in a worker's
(vault.parallel_notes). Nothing here touches the database."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from mindtui.store.notes import NoteState
from mindtui.vault.markdown import NotMarkdownError
from mindtui.vault.note_builder import (
    PLAIN_TEXT_MARK, NoteRows, ParsedFile, as_plain_text, build_rows, failure_reason, parse_file, plain_file,
)
from mindtui.vault.resolve import NameIndex
from mindtui.vault.scan import ImportWarning, VaultFile
from mindtui.vault.types import TypeRegistry


@dataclass(frozen=True)
class NoteTask:
    """One changed file to build: the hash its head was read with, the note id settled for it,
    its note's state before this run (None: new) and the state to keep when it cannot be parsed."""
    file: VaultFile
    content_hash: str
    note_id: str
    previous: NoteState | None
    stored: NoteState | None  # the note at this path before this run


@dataclass
class Built:
    path: str
    written: bool  # False: not read or parsed now, or changed since its head was read (the next run takes it)
    rows: NoteRows | None  # None when written: nothing to write (its last good version is kept, or left out)
    warnings: list[ImportWarning] = field(default_factory=list)


def parsed_well(state: NoteState | None) -> bool:
    """Whether the note has a version to keep when its file cannot be parsed now (not one that
    was itself imported as plain text)."""
    return state is not None and not state.parsed_with.endswith(PLAIN_TEXT_MARK)


class NoteReader:
    """Reads, parses and builds notes; what it has to say waits in `warnings` until taken."""

    def __init__(self, registry: TypeRegistry, max_file_bytes: int, private_paths: list[str]) -> None:
        self.registry = registry
        self.max_file_bytes = max_file_bytes
        self.private_paths = private_paths
        self.warnings: list[ImportWarning] = []

    def warn(self, path: str, reason: str) -> None:
        self.warnings.append(ImportWarning(path, reason))

    def take_warnings(self) -> list[ImportWarning]:
        taken, self.warnings = self.warnings, []
        return taken

    def read(self, file: VaultFile) -> bytes | None:
        """Its bytes; None (a warning says why; its note is kept) when it cannot be read or grew past
        import.max_file_bytes since it was listed: never read whole, whatever a program made of it."""
        limit = self.max_file_bytes
        try:
            with open(file.location, "rb") as handle:
                # read(n) sets aside n bytes first: the file's own size, not the limit, for each
                # file (2 MB a note cost the hub's cold import ~8 %); one that grew since is read on.
                size = os.fstat(handle.fileno()).st_size
                data = handle.read(min(size, limit) + 1)
                if size < len(data) <= limit:
                    data += handle.read(limit + 1 - len(data))
        except OSError as exc:
            self.warn(file.path, f"cannot read: {exc.strerror or exc}")
            return None
        if len(data) > limit:
            self.warn(file.path, f"grew past import.max_file_bytes ({limit:,}) while the import ran; skipped")
        return data if len(data) <= limit else None

    def parse(self, file: VaultFile, stored: NoteState | None) -> ParsedFile | None:
        """The file read again and parsed, when it is written; None when it cannot be read now
        (it vanished or turned binary since its head was read: the next run takes it up) or,
        when the parser fails on a note parsed well before (`stored`), for that note kept as it
        was. Any other note the parser fails on is imported as plain text, its warning saying why."""
        data = self.read(file)
        if data is None:
            return None
        try:
            return parse_file(file.path, data, file.size, file.mtime_ns, self.registry)
        except NotMarkdownError as exc:
            self.warn(file.path, str(exc))
            return None
        # The parser is a stack of third-party code (YAML, markdown-it) run on any file of the
        # vault: whatever it raises stops this file, never the import.
        except Exception as exc:
            why = failure_reason(exc)
        if parsed_well(stored):
            self.warn(file.path, f"cannot be parsed ({why}); its last good version is kept")
            return None
        self.warn(file.path, f"cannot be parsed ({why}); imported as plain text")
        return plain_file(file.path, data, file.size, file.mtime_ns,
                          f"cannot be parsed ({why}); imported as plain text, without frontmatter")

    def rows(self, item: ParsedFile, note_id: str, names: NameIndex, previous: NoteState | None) -> NoteRows | None:
        """The note's rows; when building them fails (chunking, text analysis), the note's last
        good version is kept (None: nothing is written) or a new note is built as plain text."""
        try:
            return build_rows(item, note_id, self.registry, names, self.private_paths)
        except Exception as exc:  # one note's rows: whatever fails here stops this note, not the import
            why = failure_reason(exc)
        if parsed_well(previous) and previous.note_id == note_id and previous.path == item.path:
            self.warn(item.path, f"cannot be indexed ({why}); its last good version is kept")
            return None
        reason = f"cannot be indexed ({why}); imported as plain text, without frontmatter"
        plain = as_plain_text(item, reason)
        try:
            rows = build_rows(plain, note_id, self.registry, names, self.private_paths)
        except Exception as exc:  # even its plain text cannot be indexed: left out, and said so
            self.warn(item.path, f"cannot be indexed, not even as plain text ({failure_reason(exc)}); left out")
            return None
        self.warn(item.path, reason)
        return rows

    def build(self, task: NoteTask, names: NameIndex) -> Built:
        """A changed file's rows, with what was said about it."""
        path = task.file.path
        item = self.parse(task.file, task.stored)
        if item is not None and item.content_hash != task.content_hash:
            # Edited between the two reads: its ids and names were settled from the bytes of the
            # first. Written now it would carry the scan's size and time, and the next run would
            # take it for current. Left for the next run (as it was).
            self.warn(path, "changed while it was imported; the next import takes it up")
            item = None
        if item is None:
            return Built(path, False, None, self.take_warnings())
        return Built(path, True, self.rows(item, task.note_id, names, task.previous), self.take_warnings())

