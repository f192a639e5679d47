"""What the service hands to front ends: plain dataclasses with `as_dict()` for JSON."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mindtui.errors import InputError
from mindtui.store.notes import NoteRecord, StoredChunk


class UnknownSignal(InputError):
    """A neighbour group that does not exist."""


@dataclass
class NoteView:
    note_id: str
    path: str
    title: str
    type: str
    aliases: list[str]
    tags: list[str]
    frontmatter: dict
    lang: str
    word_count: int
    private: bool
    ai_processing: bool
    warnings: list[str]
    indexed_at: str
    text: str  # the file as it is on disk (frontmatter included), or the indexed chunks
    text_source: str  # file | file-changed | index (why: the vault file is not readable)
    chunks: list[StoredChunk] = field(default_factory=list)

    def as_dict(self) -> dict:
        data = dict(self.__dict__)
        data["chunks"] = [chunk.__dict__ for chunk in self.chunks]
        return data


def note_view(record: NoteRecord, load_chunks: Callable[[], list[StoredChunk]], vault_root: str | None,
              with_chunks: bool, file_if_changed: bool) -> NoteView:
    """file_if_changed: hand out the file even when it changed since the import. An agent gets
    the indexed text then: the change might have made the note private. load_chunks: called only
    when the chunks are asked for or the text must be made of them (a 5 MB note has 10,000)."""
    text, source = None, "index"
    if vault_root:
        try:
            data = (Path(vault_root) / record.path).read_bytes()
        except OSError:
            data = None
        if data is not None:
            source = "file" if hashlib.sha256(data).hexdigest() == record.content_hash else "file-changed"
            if source == "file" or file_if_changed:
                text = data.decode("utf-8", errors="replace")
            else:
                source = "index"
    chunks = load_chunks() if with_chunks or text is None else []
    if text is None:
        text = "\n\n".join(chunk.text for chunk in chunks)
    return NoteView(record.note_id, record.path, record.title, record.type, record.aliases, record.tags,
                    record.frontmatter, record.lang, record.word_count, record.private, record.ai_processing,
                    record.warnings, record.indexed_at, text, source, chunks if with_chunks else [])


@dataclass
class NeighboursView:
    note_id: str
    path: str
    title: str
    groups: dict[str, list]  # group -> [graph.neighbours.Neighbour]

    def as_dict(self) -> dict:
        return {"note": {"note_id": self.note_id, "path": self.path, "title": self.title},
                "groups": {g: [n.as_dict() for n in entries] for g, entries in self.groups.items()}}
