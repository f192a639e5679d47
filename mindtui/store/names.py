"""Finding notes by name: one index (table note_names, migration 0010) instead of a scan.

A note can be named by its note id, its vault path (with or without `.md`), its title, an alias
or its file name, compared as `text.names.exact_key` does (no case, single spaces). Every front
end's NOTE argument and every knowledge `about` go through `notes_named`. Links do not: Obsidian
resolves them by path and file name only (vault.resolve); `alias_owners` tells which notes carry
an alias a link names (the alias_link curation card).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterable

import apsw

from mindtui.text.names import exact_key

NAME_KEY_FUNCTION = "mindtui_name_key"  # exact_key in SQL (migration 0010 fills the table with it)
WAYS = ("path", "title", "alias", "file name")  # the order in which a name is tried


@dataclass(frozen=True)
class NamedNote:
    note_id: str
    path: str
    title: str
    aliases: list[str]
    type: str


def register_name_key(conn: apsw.Connection) -> None:
    conn.create_scalar_function(NAME_KEY_FUNCTION, lambda text: exact_key(str(text or "")), 1, deterministic=True)


def _stem(path: str) -> str:
    return path[:-3] if path.lower().endswith(".md") else path


def name_rows(note_id: str, path: str, title: str, aliases: Iterable[str]) -> list[tuple[str, str, str]]:
    """(key, how, note_id) of every name of one note."""
    stem = _stem(path)
    names = [("path", stem), ("title", title), *(("alias", a) for a in aliases), ("file name", stem.rpartition("/")[2])]
    rows = {(exact_key(name), how, note_id) for how, name in names if isinstance(name, str)}
    return sorted(row for row in rows if row[0])


def insert_names(conn: apsw.Connection, note_id: str, path: str, title: str, aliases: Iterable[str]) -> None:
    conn.executemany("INSERT INTO note_names (key, how, note_id) VALUES (?,?,?)",
                     name_rows(note_id, path, title, aliases))


# `notes`, not `main.notes`: on an agent's connection its view hides what the agent may not see.
_NAMED = ("SELECT {group}, n.note_id, n.path, n.title, n.aliases, n.type FROM note_names k"
          " JOIN notes n ON n.note_id = k.note_id WHERE {where}")


def _grouped(rows) -> dict[str, list[NamedNote]]:
    """group -> its notes by path, from rows (group, note_id, path, title, aliases, type)."""
    found: dict[str, list[NamedNote]] = {}
    for group, note_id, path, title, aliases, type_ in rows:
        found.setdefault(group, []).append(NamedNote(note_id, path, title, json.loads(aliases), type_))
    for notes in found.values():
        notes.sort(key=lambda note: note.path)
    return found


def notes_named(conn: apsw.Connection, name: str) -> tuple[str, list[NamedNote]]:
    """(how, notes) of the first way `name` names notes: note id, vault path, title, alias, file
    name. One note: the name is unique (or written exactly as only one of its namesakes has it);
    several: ambiguous in that way; none: ('', [])."""
    text = name.strip()
    by_id = conn.execute("SELECT note_id, path, title, aliases, type FROM notes WHERE note_id = ?", (text,)).fetchall()
    if by_id:
        return "note id", [NamedNote(r[0], r[1], r[2], json.loads(r[3]), r[4]) for r in by_id]
    found = _grouped(conn.execute(_NAMED.format(group="k.how", where="k.key = ?"), (exact_key(_stem(text)),)))
    how, notes = next(((how, found[how]) for how in WAYS if how in found), ("", []))
    # Names compare without case, but a name written exactly as one of the namesakes has it
    # (`Konzepte/SQLite.md` beside `Konzepte/sqlite.md`) is no guess: that one is meant.
    exact = [note for note in notes if _stem(text) in _names_as_written(note, how)]
    return how, exact if len(notes) > 1 and len(exact) == 1 else notes


def _names_as_written(note: NamedNote, how: str) -> set[str]:
    stem = _stem(note.path)
    return {"path": {stem}, "title": {note.title}, "alias": set(note.aliases),
            "file name": {stem.rpartition("/")[2]}}[how]


def is_visible_name(conn: apsw.Connection, key: str) -> bool:
    """Whether a note the connection's reader sees (`notes`: an agent's view hides the others) is
    named `key` (an exact_key) by its title, an alias, its vault path or a suffix of the path down
    to its file name (`sub/note` of `a/sub/note`): what a link may name and still stand in text an
    agent reads (service.redact). Two index lookups, never a scan."""
    if conn.execute("SELECT 1 FROM note_names k JOIN notes n ON n.note_id = k.note_id WHERE k.key = ? LIMIT 1",
                    (key,)).fetchone():
        return True
    if "/" not in key:
        return False
    return any(path.endswith("/" + key) for (path,) in conn.execute(
        "SELECT p.key FROM note_names f JOIN notes n ON n.note_id = f.note_id"
        " JOIN note_names p ON p.note_id = f.note_id AND p.how = 'path' WHERE f.key = ? AND f.how = 'file name'",
        (key.rpartition("/")[2],)))


def alias_owners(conn: apsw.Connection, names: Iterable[str]) -> dict[str, list[NamedNote]]:
    """name -> the notes that carry it as an alias (compared as exact_key, `.md` dropped), for
    each of the names that is an alias."""
    keys = {name: exact_key(_stem(name)) for name in names}
    wanted = sorted(set(keys.values()))
    owners: dict[str, list[NamedNote]] = {}
    for start in range(0, len(wanted), 500):  # bound parameters per statement
        part = wanted[start:start + 500]
        where = f"k.how = 'alias' AND k.key IN ({','.join('?' * len(part))})"
        owners.update(_grouped(conn.execute(_NAMED.format(group="k.key", where=where), part)))
    return {name: owners[key] for name, key in keys.items() if key in owners}
