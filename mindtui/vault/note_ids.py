"""Which note id each file gets in an import (the importer's rules, without its I/O)."""

from __future__ import annotations

from collections import defaultdict
from typing import Callable

from mindtui.vault.note_builder import path_note_id


def settle_ids(kept: dict[str, str], declared: dict[str, str | None], hidden: dict[str, bool],
               previous: dict[str, str | None], warn: Callable[[str, str], None]) -> dict[str, str]:
    """path -> note id for every path of `declared` (its frontmatter id, or None) and of `kept`.

    kept: the notes kept as they were (they cannot be read now) and their ids; hidden: whether a
    path's note is hidden from agents; previous: the id each path had (at its path, or the note it
    was renamed from), None for a new note.
    0. A note kept as it was keeps its id: nothing may take it.
    1. A frontmatter id belongs to the note that has it already; otherwise to the first path, in
       sort order, that declares it, a note agents may see before a hidden one (else an agent
       would find the visible note under another id than in the vault without the hidden one).
       So a copy of a note never takes the original's id, and a clean run decides by sort order.
    2. Otherwise a note keeps the id it had.
    3. A new note gets a hash of its path (made unique if a kept id already uses it)."""
    ids = dict(kept)
    taken = set(ids.values())
    claims: dict[str, list[str]] = defaultdict(list)
    for path in sorted(declared):
        if declared[path]:
            claims[declared[path]].append(path)
    for value, paths in claims.items():
        holders = [p for p in paths if previous[p] == value]
        winner = None if value in taken else (holders or sorted(paths, key=hidden.__getitem__))[0]
        if winner is not None:
            ids[winner] = value
            taken.add(value)
        for path in paths:
            if path != winner:
                owner = winner or "a note that cannot be read now"
                warn(path, f"duplicate frontmatter id {value!r} (also in {owner}); using another id")
    for path in sorted(p for p in declared if p not in ids):
        before = previous[path]
        if before is not None and before not in taken:
            ids[path] = before
            taken.add(before)
    for path in sorted(p for p in declared if p not in ids):
        note_id, salt = path_note_id(path), 1
        while note_id in taken:
            note_id, salt = path_note_id(f"{path}\n{salt}"), salt + 1
        ids[path] = note_id
        taken.add(note_id)
    return ids
