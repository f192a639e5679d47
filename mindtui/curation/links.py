"""Link cards: a link whose target is missing (unresolved_link), names a note's alias
(alias_link) or names several notes (ambiguous_link).

One card per source note and target (normalised as links resolve: case, `.md`), whatever the
number of links to it in that note; an action changes all of them. Attachments and links to
files outside the index are not cards.

A link that names an alias does not resolve (Obsidian's rule: aliases are offered while a link
is typed, never used to resolve one). It is a kind of its own, not an action on its
unresolved_link card: the note exists, so the missing-note answers would be wrong (`create`
would make a second note for a name one note already has), and the fitting answer, writing
`[[Target|alias]]`, is one key. A missing link is one card or the other, never both.
"""

from __future__ import annotations

import datetime
import posixpath
import re

import apsw

from mindtui.config import Settings
from mindtui.curation.kinds import (
    Action, Arg, Candidate, EditContext, FileEdit, Kind, Plan, UnknownAction, dismiss_plan, subject,
)
from mindtui.curation.rewrite import Retarget, retarget_links
from mindtui.curation.vault_edit import EditRefused, NoteChanged, read_bytes, read_checked, unportable_name
from mindtui.store import curation_store, former_paths, graph_store
from mindtui.store import notes as note_store
from mindtui.store.names import NamedNote, alias_owners
from mindtui.store.curation_store import CurationItem, LinkRow
from mindtui.text.globs import excluded_by
from mindtui.vault.links import is_attachment
from mindtui.vault.resolve import NameIndex, stem_key

LINKS_SHOWN = 20  # links listed on one card
DISMISS = Action("dismiss", "d", "leave the link as it is; this card does not come back")
DEFAULT_TEMPLATE = "# {{title}}\n"


def _grouped(rows: list[LinkRow]) -> dict[tuple[str, str], list[LinkRow]]:
    groups: dict[tuple[str, str], list[LinkRow]] = {}
    for row in rows:
        groups.setdefault((row.note_id, stem_key(row.target_path)), []).append(row)
    return groups


def _payload(rows: list[LinkRow], key: str) -> dict:
    first = rows[0]
    return {"source_path": first.path, "source_title": first.title, "target": first.target_path, "target_key": key,
            "links": [{"line": r.line, "target_raw": r.target_raw, "embed": r.is_embed, "evidence": r.evidence}
                      for r in rows[:LINKS_SHOWN]], "links_total": len(rows)}


def name_index(conn: apsw.Connection) -> NameIndex:
    names = NameIndex()
    for ref in graph_store.all_note_refs(conn):
        names.add_note(ref.note_id, ref.path, ref.aliases)
    return names


def link_name(names: NameIndex, note: note_store.NoteRecord, source_path: str) -> str:
    """The shortest name that links to `note` from `source_path`: its file name when that is
    unique, else its vault path (both without .md)."""
    stem = note.path[:-3] if note.path.lower().endswith(".md") else note.path
    short = stem.rpartition("/")[2]
    return short if names.matches(short, source_path)[1] == [note.note_id] else stem


def _source(ctx: EditContext, item: CurationItem) -> tuple[note_store.NoteRecord, bytes]:
    """The card's source note and its file, which must be as indexed."""
    record = note_store.load_note(ctx.conn, item.note_id) if item.note_id else None
    if record is None:
        raise NoteChanged(f"{item.payload.get('source_path', 'the note')} is no longer indexed; "
                          "the card is checked again")
    return record, read_checked(ctx.vault_file(record.path), record.path, record.content_hash)


def _target_note(ctx: EditContext, args: dict) -> note_store.NoteRecord:
    note_id = args.get("target")
    record = note_store.load_note(ctx.conn, note_id) if note_id else None
    if record is None:
        raise UnknownAction("this action needs a target note (--target NOTE)")
    return record


def _missing_links(conn: apsw.Connection) -> tuple[dict[tuple[str, str], list[LinkRow]], dict[str, list[NamedNote]]]:
    """The missing links to notes by (source note, target key), and for the targets that are
    an alias the notes that carry it."""
    groups = _grouped([r for r in curation_store.links_with_resolution(conn, "missing")
                       if not is_attachment(r.target_path)])
    return groups, alias_owners(conn, [rows[0].target_path for rows in groups.values()])


def _renamed_to(conn: apsw.Connection, keys: set[str]) -> dict[str, dict]:
    """For a missing link's key, the note that had a path the link names (its whole path, or its
    last parts as a shorter link resolves) before the import matched a rename: {note_id, path,
    title}. A key that names former paths of several notes gets none (which was meant is a guess)."""
    found: dict[str, dict[str, dict]] = {}
    for former, note_id, path, title in former_paths.all_former_paths(conn):
        parts = stem_key(former).split("/")
        for key in {"/".join(parts[start:]) for start in range(len(parts))} & keys:
            found.setdefault(key, {})[note_id] = {"note_id": note_id, "path": path, "title": title}
    return {key: next(iter(notes.values())) for key, notes in found.items() if len(notes) == 1}


def _retarget(ctx: EditContext, item: CurationItem, target: note_store.NoteRecord, name: str,
              name_as_label: bool = False) -> FileEdit:
    record, data = _source(ctx, item)
    key = item.payload["target_key"]
    change = Retarget(lambda path: stem_key(path) == key, name, target.path, name_as_label)
    text, count = retarget_links(data, record.path, change)
    if not count:
        raise EditRefused(f"found no link to [[{item.payload['target']}]] in {record.path}; edit it by hand")
    return FileEdit(record.path, record.content_hash, text.decode("utf-8"))


class _LinkCard(Kind):
    """What the link kinds share: the card's subject line, and `dismiss` leaves the link as it is."""

    family = "links"

    def summary(self, item: CurationItem) -> tuple[str, str]:
        p = item.payload
        return f"{p['source_title']} -> [[{p['target']}]]", self.what(p)

    def what(self, payload: dict) -> str:
        raise NotImplementedError

    def plan(self, ctx: EditContext, item: CurationItem, action: Action, args: dict) -> Plan:
        if action.name == "dismiss":
            return dismiss_plan(action, f"the link to [[{item.payload['target']}]] stays as it is")
        return self.answer(ctx, item, action, args)

    def answer(self, ctx: EditContext, item: CurationItem, action: Action, args: dict) -> Plan:
        raise NotImplementedError


class UnresolvedLink(_LinkCard):
    name = "unresolved_link"
    actions = (
        Action("create", "c", "create the missing note from the template (curation.note_template) and import it",
               confirm=True),
        Action("retarget", "r", "point the link(s) at an existing note, keeping label and heading",
               (Arg("target", "note", "the note the link should name"),), confirm=True),
        DISMISS,
    )
    gone_reason = "the link resolves now, or it is gone"

    def detect(self, conn: apsw.Connection, settings: Settings, sources: dict) -> list[Candidate]:
        groups, aliases = _missing_links(conn)
        groups = {k: rows for k, rows in groups.items() if rows[0].target_path not in aliases}  # alias_link cards
        sources_of: dict[str, set[str]] = {}
        for note_id, key in groups:
            sources_of.setdefault(key, set()).add(note_id)
        renamed = _renamed_to(conn, set(sources_of))
        out = []
        for (note_id, key), group in groups.items():
            linked_from = len(sources_of[key])
            # A missing note many notes link to is worth writing: 1 note 0.4, 2 notes 0.65, 5 notes 0.8, -> 0.9.
            # A link to a renamed note is a sure fix that joins it to the graph again: as an alias link.
            importance = 0.6 if key in renamed else round(0.4 + 0.5 * (1 - 1 / linked_from), 4)
            payload = {**_payload(group, key), "linked_from": linked_from,
                       **({"renamed_to": renamed[key]} if key in renamed else {})}
            out.append(Candidate(subject(note=note_id, target=key), note_id, payload, importance))
        return out

    def what(self, payload: dict) -> str:
        lines = ", ".join(str(link["line"]) for link in payload["links"][:5])
        renamed = payload.get("renamed_to")
        if renamed:  # `retarget` offers it first (the TUI's note search starts with its title)
            return (f"{payload['target']!r} was renamed: the note is {renamed['path']} now (line {lines});"
                    f" retarget the link to it")
        return f"no note named {payload['target']!r} (line {lines}); linked from {payload['linked_from']} note(s)"

    def answer(self, ctx: EditContext, item: CurationItem, action: Action, args: dict) -> Plan:
        if action.name == "retarget":
            target = _target_note(ctx, args)
            edit = _retarget(ctx, item, target, link_name(name_index(ctx.conn), target, item.payload["source_path"]))
            return Plan("resolved", {"by": "owner", "action": "retarget", "target": target.note_id,
                                     "target_path": target.path}, f"the link now names {target.path}", [edit])
        path = new_note_path(ctx.settings, item.payload["target"], item.payload["source_path"])
        unportable = unportable_name(path)
        if unportable:
            raise EditRefused(f"{path[:80]!r}: {unportable}; nothing was written (retarget the link, or create "
                              "the note by hand under another name)")
        if excluded_by(path, ctx.settings.import_.exclude) is not None:
            raise EditRefused(f"{path} is in a folder import.exclude leaves out: the link would still not resolve; "
                              "set curation.new_note_folder or retarget the link")
        if ctx.write_file(path).exists():
            raise EditRefused(f"{path} exists already (not a note the index knows); not overwritten")
        template, notice = load_template(ctx)
        text = render_template(template, path.rpartition("/")[2][:-3], datetime.datetime.now())
        return Plan("resolved", {"by": "owner", "action": "create", "path": path},
                    f"created {path}" + notice, [FileEdit(path, None, text)])


class AmbiguousLink(_LinkCard):
    name = "ambiguous_link"
    actions = (
        Action("pick", "p", "point the link(s) at one of the candidates by its vault path; they read as written",
               (Arg("target", "note", "one of the candidate notes"),), confirm=True),
        DISMISS,
    )
    gone_reason = "the link is unambiguous now, or it is gone"

    def detect(self, conn: apsw.Connection, settings: Settings, sources: dict) -> list[Candidate]:
        names = name_index(conn)
        refs = {ref.note_id: ref for ref in graph_store.all_note_refs(conn)}
        out = []
        for (note_id, key), group in _grouped(curation_store.links_with_resolution(conn, "ambiguous")).items():
            how, found = names.matches(group[0].target_path, group[0].path)
            if len(found) < 2:
                continue  # the index changed since the link was resolved: the next import settles it
            candidates = [{"note_id": n, "path": refs[n].path, "title": refs[n].title} for n in found if n in refs]
            # A link that names several notes drops out of the graph; a fixed middle rank.
            out.append(Candidate(subject(note=note_id, target=key), note_id,
                                 {**_payload(group, key), "matched_by": how, "candidates": candidates}, 0.6))
        return out

    def what(self, payload: dict) -> str:
        paths = ", ".join(c["path"] for c in payload["candidates"][:4])
        return f"{len(payload['candidates'])} notes match by {payload['matched_by']}: {paths}"

    def answer(self, ctx: EditContext, item: CurationItem, action: Action, args: dict) -> Plan:
        target = _target_note(ctx, args)
        if target.note_id not in {c["note_id"] for c in item.payload["candidates"]}:
            listed = ", ".join(c["path"] for c in item.payload["candidates"])
            raise UnknownAction(f"{target.path} is not one of the candidates ({listed})")
        stem = target.path[:-3] if target.path.lower().endswith(".md") else target.path
        # [[Doppelt]] -> [[A/Doppelt|Doppelt]]: the path settles which note, the text reads as before.
        edit = _retarget(ctx, item, target, stem, name_as_label=True)
        return Plan("resolved", {"by": "owner", "action": "pick", "target": target.note_id, "target_path": target.path},
                    f"the link now names {stem}", [edit])


class AliasLink(_LinkCard):
    name = "alias_link"
    actions = (
        Action("link", "l", "write the link(s) as [[Target|alias]]: they resolve and still read as written",
               (Arg("target", "note", "the note, when several carry the alias", required=False),)),
        DISMISS,
    )
    gone_reason = "the link resolves now, names no alias, or it is gone"

    def detect(self, conn: apsw.Connection, settings: Settings, sources: dict) -> list[Candidate]:
        groups, aliases = _missing_links(conn)
        out = []
        for (note_id, key), group in groups.items():
            owners = aliases.get(group[0].target_path)
            if owners:
                # A sure fix that joins the link to the graph: ranked with a link that names several notes.
                out.append(Candidate(subject(note=note_id, target=key), note_id, {**_payload(group, key), "owners": [
                    {"note_id": o.note_id, "path": o.path, "title": o.title} for o in owners]}, 0.6))
        return out

    def what(self, payload: dict) -> str:
        paths = ", ".join(o["path"] for o in payload["owners"][:4])
        return f"{payload['target']!r} is an alias of {paths}; aliases do not resolve links"

    def answer(self, ctx: EditContext, item: CurationItem, action: Action, args: dict) -> Plan:
        owners = {o["note_id"]: o["path"] for o in item.payload["owners"]}
        chosen = args.get("target") or (next(iter(owners)) if len(owners) == 1 else None)
        if chosen not in owners:
            listed = ", ".join(sorted(owners.values()))
            raise UnknownAction(f"choose the note with --target: {listed} carry the alias" if chosen is None
                                else f"that note does not carry the alias; choose one of {listed}")
        target = _target_note(ctx, {"target": chosen})
        name = link_name(name_index(ctx.conn), target, item.payload["source_path"])
        edit = _retarget(ctx, item, target, name, name_as_label=True)
        return Plan("resolved", {"by": "owner", "action": "link", "target": target.note_id, "target_path": target.path},
                    f"the link now names {target.path} and still reads as written", [edit])


# -- a new note from the template ---------------------------------------------------------

def new_note_path(settings: Settings, target: str, source_path: str) -> str:
    """Where a missing link's note is created: a target with a folder where it says (relative to the
    linking note when it starts with '.'), else curation.new_note_folder / target.md."""
    name = target.strip().replace("\\", "/").lstrip("/")
    if name.lower().endswith(".md"):
        name = name[:-3]
    if name.startswith("."):
        name = posixpath.normpath(posixpath.join(source_path.rpartition("/")[0], name))
    elif "/" not in name and settings.curation.new_note_folder.strip("/"):
        name = f"{settings.curation.new_note_folder.strip('/')}/{name}"
    return name + ".md"


def load_template(ctx: EditContext) -> tuple[str, str]:
    """(template text, a notice when the configured file is missing or unusable)."""
    configured = ctx.settings.curation.note_template
    if not configured:
        return DEFAULT_TEMPLATE, ""
    data = read_bytes(ctx.vault_file(configured))
    if data is None:
        return DEFAULT_TEMPLATE, f" (template {configured} not found: a heading only)"
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError:
        return DEFAULT_TEMPLATE, f" (template {configured} is not UTF-8: a heading only)"


_MOMENT = {"YYYY": "%Y", "YY": "%y", "MMMM": "%B", "MM": "%m", "DD": "%d", "dddd": "%A", "HH": "%H", "mm": "%M",
           "ss": "%S"}
_MOMENT_TOKEN = re.compile("|".join(sorted(_MOMENT, key=len, reverse=True)))
_VARIABLE = re.compile(r"\{\{\s*(title|date|time)\s*(?::([^}]*))?\}\}")


def render_template(template: str, title: str, when: datetime.datetime) -> str:
    """Obsidian's core template variables: {{title}}, {{date}} (YYYY-MM-DD), {{time}} (HH:mm), and
    {{date:FORMAT}} / {{time:FORMAT}} with the common moment.js tokens. Others stay as written."""
    def value(match: re.Match[str]) -> str:
        name, fmt = match.group(1), match.group(2)
        if name == "title":
            return title
        pattern = fmt.strip() if fmt and fmt.strip() else ("YYYY-MM-DD" if name == "date" else "HH:mm")
        return when.strftime(_MOMENT_TOKEN.sub(lambda m: _MOMENT[m.group(0)], pattern.replace("%", "%%")))

    return _VARIABLE.sub(value, template)
