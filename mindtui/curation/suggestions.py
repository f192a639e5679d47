"""Link suggestion cards: two notes close in meaning that are not linked either way.

Closeness is the cosine of the notes' mean chunk vectors (each note's chunk vectors averaged and
normalised): measured on the sample vault it ranks related pairs above pairs that merely share
one generic chunk, which the best single chunk pair does not (e5 gives every short heading-like
chunk a high cosine). The close pairs are kept incrementally (curation.close_notes): a refresh
looks up only the notes whose vectors changed and their close notes. Strong = at least curation.suggestion_min_cosine. Only notes a model may
read (ai_processing on) take part, and no work log (graph.work_logs: it names everything).
The subject is the unordered pair: a rejected pair is never suggested again, either way round.
"""

from __future__ import annotations

import datetime
import re

import apsw

from mindtui.config import Settings
from mindtui.curation.kinds import (
    Action, Arg, Candidate, EditContext, FileEdit, Kind, Plan, UnknownAction, dismiss_plan, subject,
)
from mindtui.curation.close_notes import refresh_close_pairs
from mindtui.curation.links import link_name, name_index
from mindtui.curation.note_lines import NoteLines, edit_lines
from mindtui.curation.vault_edit import EditRefused, NoteChanged, read_checked
from mindtui.store import close_pairs, curation_store, graph_store, vector_codes
from mindtui.store import notes as note_store
from mindtui.store.curation_store import CurationItem
from mindtui.store.meta import EMBEDDING_MODEL_KEY, get_meta
from mindtui.text.globs import excluded_by
from mindtui.vault.links import WIKILINK, split_target
from mindtui.vault.resolve import stem_key

# Close notes looked up per note (curation.close_notes): the cards a refresh adds are few
# (curation.max_new_suggestions), the best pairs; a note close to more than this many at the
# floor has its nearest kept.
NEIGHBOURS = 20
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


class LinkSuggestion(Kind):
    name = "link_suggestion"
    family = "suggestions"
    actions = (
        Action("accept", "a", "link them: `- [[other]]` under curation.related_heading in the first note"),
        Action("reject", "r", "they do not belong together: never suggest this pair again"),
        Action("snooze", "s", "ask again later (curation.snooze_days, or --days N)",
               (Arg("days", "int", "days until the card comes back", required=False),)),
    )
    gone_reason = "the notes are linked now, or no longer close in meaning"

    def detect(self, conn: apsw.Connection, settings: Settings, sources: dict) -> list[Candidate] | None:
        model_id = get_meta(conn, EMBEDDING_MODEL_KEY)
        if not model_id:
            return None  # nothing embedded yet: no judgement either way
        floor = settings.curation.suggestion_min_cosine
        refresh_close_pairs(conn, model_id, floor, NEIGHBOURS)  # only what changed since the last refresh
        if not vector_codes.vector_count(conn, model_id, vector_codes.NOTES):
            return None
        linked = curation_store.linked_note_pairs(conn)
        refs = {ref.note_id: ref for ref in graph_store.all_note_refs(conn)}
        logs = {n for n, ref in refs.items() if excluded_by(ref.path, settings.graph.work_logs) is not None}
        around: dict[str, set[str]] = {}
        for a, b in linked:
            around.setdefault(a, set()).add(b)
            around.setdefault(b, set()).add(a)

        def usable(a: str, b: str) -> bool:
            return (a, b) not in linked and a not in logs and b not in logs and a in refs and b in refs

        def importance(cosine: float) -> float:
            # The bar maps to 0.2, a cosine of 1 to 0.7: below the link repairs, ordered by closeness.
            return round(0.2 + 0.5 * min(1.0, max(0.0, (cosine - floor) / max(1e-9, 1.0 - floor))), 4)

        # Candidates for the pairs that have a card (kept, updated or closed by the refresh) and for
        # the best pairs that could get a new one: a refresh adds the best
        # curation.max_new_suggestions of those without, so the best that many more than there are
        # cards hold them, ties included (a million notes have millions of close pairs: not one each).
        existing = curation_store.items_of_kind(conn, self.name)
        carded = {tuple(sorted((i.payload["source"]["note_id"], i.payload["target"]["note_id"])))
                  for i in existing.values()}
        room = settings.curation.max_new_suggestions + len(existing)
        chosen: dict[tuple[str, str], float] = {}
        bar = None
        for a, b, cosine in close_pairs.closest_first(conn):
            if not usable(a, b):
                continue
            if bar is not None and importance(cosine) < bar:
                break
            chosen[(a, b)] = cosine
            if len(chosen) == room:
                bar = importance(cosine)
        chosen.update((pair, cosine) for pair, cosine in close_pairs.cosines_of(conn, sorted(carded - set(chosen)))
                      .items() if usable(*pair))
        out = []
        for (a, b), cosine in chosen.items():
            # The note with fewer links gets the link (it needs it more); ties by path.
            source, target = sorted((refs[a], refs[b]), key=lambda r: (len(around.get(r.note_id, ())), r.path))
            payload = {"source": {"note_id": source.note_id, "path": source.path, "title": source.title},
                       "target": {"note_id": target.note_id, "path": target.path, "title": target.title},
                       "cosine": round(cosine, 4),
                       "shared_links": len(around.get(a, set()) & around.get(b, set()))}
            out.append(Candidate(subject(pair=[a, b]), source.note_id, payload, importance(cosine)))
        return out

    def new_card_limit(self, conn: apsw.Connection, settings: Settings, waiting: int) -> int:
        """A refresh adds suggestions, best first, only while fewer than curation.max_new_suggestions
        are open or snoozed: the queue never floods, and a second refresh adds none."""
        return max(0, settings.curation.max_new_suggestions - waiting)

    def summary(self, item: CurationItem) -> tuple[str, str]:
        p = item.payload
        shared = f", {p['shared_links']} shared link(s)" if p["shared_links"] else ""
        return (f"{p['source']['title']} <-> {p['target']['title']}",
                f"close in meaning (cosine {p['cosine']:.3f}{shared}), not linked")

    def plan(self, ctx: EditContext, item: CurationItem, action: Action, args: dict) -> Plan:
        if action.name == "reject":
            return dismiss_plan(action, "this pair is not suggested again")
        if action.name == "snooze":
            days = args.get("days") or ctx.settings.curation.snooze_days
            if not isinstance(days, int) or days < 1:
                raise UnknownAction(f"snooze needs a whole number of days >= 1, not {days!r}")
            until = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=days)).isoformat(
                timespec="seconds")
            return Plan("snoozed", {"by": "owner", "action": "snooze", "days": days},
                        f"snoozed for {days} day(s)", snoozed_until=until)
        source = note_store.load_note(ctx.conn, item.payload["source"]["note_id"])
        target = note_store.load_note(ctx.conn, item.payload["target"]["note_id"])
        if source is None or target is None:
            raise NoteChanged("a note of this pair is no longer indexed; the card is checked again")
        data = read_checked(ctx.vault_file(source.path), source.path, source.content_hash)
        name = link_name(name_index(ctx.conn), target, source.path)
        text = add_related_link(data, source.path, ctx.settings.curation.related_heading, name, target.path)
        answer = {"by": "owner", "action": "accept", "source": source.note_id, "target": target.note_id}
        if text is None:
            return Plan("resolved", answer, f"{source.path} already links [[{name}]] under its heading")
        return Plan("resolved", answer, f"linked [[{name}]] from {source.path}",
                    [FileEdit(source.path, source.content_hash, text)])


def add_related_link(data: bytes, path: str, heading: str, name: str, target_path: str) -> str | None:
    """The note's text with `- [[name]]` at the end of the section `heading` (made at the end of the
    note when absent); None when that section links the note already."""
    wanted = _HEADING.match(heading.strip())
    if wanted is None:
        raise EditRefused(f"curation.related_heading {heading!r} is not a markdown heading (e.g. '## Verwandt')")
    level, title = len(wanted.group(1)), wanted.group(2).casefold()
    keys = {stem_key(name), stem_key(target_path)}
    item = f"- [[{name}]]"

    def add(note: NoteLines) -> bool:
        section = None
        for index in range(note.start_line, len(note.lines)):
            found = _HEADING.match(note.scan(index))
            if section is None and found and len(found.group(1)) == level and found.group(2).casefold() == title:
                section = [index, len(note.lines)]
            elif section is not None and found and len(found.group(1)) <= level:
                section[1] = index
                break
        if section is None:
            at = note.end_index()
            blank_before = at > 0 and note.lines[at - 1].strip() != ""
            note.insert(at, [""] * blank_before + [heading.strip(), "", item])
            return True
        first, end = section
        for index in range(first + 1, end):
            if any(stem_key(split_target(m.group(2))[1]) in keys for m in WIKILINK.finditer(note.scan(index))):
                return False
        last = max((i for i in range(first, end) if note.lines[i].strip()), default=first)
        note.insert(last + 1, ["", item] if last == first else [item])  # a blank line between heading and list
        return True

    text, added = edit_lines(data, path, "add the link", add)
    return text.decode("utf-8") if added else None
