"""The knowledge kinds of curation card and what their answers do.

The writer files four kinds when it is unsure about a proposal (unresolved_entity, duplicate,
contradiction, missing_quote): their payload holds the proposal and its source, so an answer
replays it through the writer with the owner's decision (`submit(..., force=...)`); their
detect() returns None (a refresh leaves them alone). Two kinds come from the nightly steps:
gap_question (an entity note no confirmed item is about; `gaps`) and stale (an item whose source
text changed or vanished; `consolidate` and the callout sync). Keys are the same across kinds:
c confirm, r reject, m merge into, e supersede, a answer, l link, t keep as topic, s snooze.

The knowledge write happens when the answer is planned, before the card's own transaction; the
answer's undo record holds what it changed (store.knowledge_journal), so an undo reopens the card
and puts the knowledge back: an item it added ends (kept as history: nothing is deleted), an item
it superseded, confirmed or retracted is as before.
"""

from __future__ import annotations

import datetime

import apsw

from mindtui.config import Settings
from mindtui.curation.kinds import Action, Arg, Candidate, EditContext, Kind, Plan, UnknownAction, dismiss_plan, subject
from mindtui.curation.registry import register
from mindtui.knowledge.proposal import TYPES, Proposal, Source, parse_proposal
from mindtui.knowledge.writer import Decision, submit
from mindtui.store import knowledge_lifecycle_store as life
from mindtui.store.curation_store import CurationItem

SNOOZE = Action("snooze", "s", "ask again later (curation.snooze_days, or --days N)",
                (Arg("days", "int", "days until the card comes back", required=False),))
REJECT = Action("reject", "r", "drop the proposal: nothing is recorded and this card does not come back")


def snooze_plan(ctx: EditContext, action: Action, args: dict) -> Plan:
    days = args.get("days") or ctx.settings.curation.snooze_days
    if isinstance(days, bool) or not isinstance(days, int) or days < 1:
        raise UnknownAction(f"snooze needs a whole number of days >= 1, not {days!r}")
    until = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=days)).isoformat(
        timespec="seconds")
    return Plan("snoozed", {"by": "owner", "action": "snooze", "days": days}, f"snoozed for {days} day(s)",
                snoozed_until=until)


def _text(args: dict, name: str = "text") -> str:
    value = args.get(name)
    if not isinstance(value, str) or not value.strip():
        raise UnknownAction(f"this action needs --{name} TEXT")
    return value.strip()


def _statement(text: str) -> tuple[str, str]:
    """The owner's answer: its first line is the statement, the rest its body."""
    first, _, rest = text.strip().partition("\n")
    return " ".join(first.split()), rest.strip()


def _resolved(action: Action, decision: Decision, message: str) -> Plan:
    if decision.decision == "invalid":  # e.g. the item to merge into was superseded meanwhile: the card stays open
        raise UnknownAction(f"{action.name}: the writer refused it: {decision.reason}")
    answer = {"by": "owner", "action": action.name, "decision": decision.decision, "reason": decision.reason,
              "knowledge_item": decision.item_id, "card": decision.card_id}
    return Plan("resolved", answer, f"{message}: {decision.decision} ({decision.reason})")


def _item_label(conn: apsw.Connection, item_id: int | None) -> str:
    item = life.get_item(conn, item_id) if item_id else None
    return f"#{item_id} {item.type}: {item.title}" if item else f"#{item_id}"


# -- the writer's cards --------------------------------------------------------------------

class HeldProposal(Kind):
    """A card the writer filed instead of deciding: its payload holds the proposal and its source."""

    family = "knowledge"
    gone_reason = "the proposal was decided otherwise"

    def detect(self, conn: apsw.Connection, settings: Settings, sources: dict) -> None:
        return None  # filed by the writer only; a refresh leaves these cards as they are

    def replay(self, ctx: EditContext, item: CurationItem, force: str | None = None, **changes) -> Decision:
        data = {**item.payload["proposal"], **changes}
        proposal: Proposal = parse_proposal({k: v for k, v in data.items() if v is not None})
        return submit(ctx.conn, ctx.settings, proposal, Source.from_dict(item.payload["source"]), force=force)

    def existing(self, item: CurationItem) -> int:
        found = item.payload.get("item_id")
        if not isinstance(found, int):
            raise UnknownAction(f"card {item.item_id} names no existing item")
        return found

    def proposal_line(self, item: CurationItem) -> str:
        p = item.payload.get("proposal") or {}
        return f"{p.get('type', '?')}: {p.get('title', '')}"

    def source_line(self, item: CurationItem) -> str:
        source = item.payload.get("source") or {}
        return str(source.get("id", "?"))


class UnresolvedEntity(HeldProposal):
    name = "unresolved_entity"
    actions = (
        Action("link", "l", "it is about this entity note: the proposal goes in with it",
               (Arg("target", "note", "the entity note it is about"),)),
        Action("topic", "t", "keep the name as a free topic (about: topic:<name>), no note"),
        REJECT,
        SNOOZE,
    )

    def summary(self, item: CurationItem) -> tuple[str, str]:
        reason = item.payload.get("reason") or f"about {self.name_of(item)!r} names no entity note"
        return (self.proposal_line(item), f"{reason} (from {self.source_line(item)})")

    def name_of(self, item: CurationItem) -> str:
        p = item.payload
        name = p.get("name") or p.get("about") or (p.get("proposal") or {}).get("about") or ""
        return name[len("topic:"):] if name.startswith("topic:") else name

    def plan(self, ctx: EditContext, item: CurationItem, action: Action, args: dict) -> Plan:
        if action.name == "reject":
            return dismiss_plan(action, "the proposal was dropped")
        if action.name == "snooze":
            return snooze_plan(ctx, action, args)
        if action.name == "topic":
            name = self.name_of(item)
            return _resolved(action, self.replay(ctx, item, force="add", about=f"topic:{name}"),
                             f"kept as topic {name!r}")
        target = args.get("target")
        if not target:
            raise UnknownAction("link needs --target NOTE (the entity note)")
        return _resolved(action, self.replay(ctx, item, force="add", about=target), "linked to the note")


class Duplicate(HeldProposal):
    name = "duplicate"
    actions = (
        Action("merge", "m", "the same statement: count the proposal as a source of the existing item"),
        Action("confirm", "c", "a different statement after all: add it as an item of its own"),
        Action("supersede", "e", "the proposal replaces the existing item (kept as history)"),
        REJECT,
        SNOOZE,
    )

    def summary(self, item: CurationItem) -> tuple[str, str]:
        p = item.payload
        cosine = p.get("similarity")
        close = f" ({p.get('method', '')} cosine {cosine:.3f})" if isinstance(cosine, (int, float)) else ""
        other = p.get("item") if isinstance(p.get("item"), dict) else {}
        title = f" {other.get('title')!r}" if other.get("title") else ""
        return (self.proposal_line(item), f"nearly the same as item #{p.get('item_id')}{title}{close}")

    def plan(self, ctx: EditContext, item: CurationItem, action: Action, args: dict) -> Plan:
        if action.name == "reject":
            return dismiss_plan(action, "the proposal was dropped")
        if action.name == "snooze":
            return snooze_plan(ctx, action, args)
        existing = self.existing(item)
        force = {"merge": f"merge:{existing}", "confirm": "add", "supersede": f"supersede:{existing}"}[action.name]
        label = f"{action.name} ({_item_label(ctx.conn, existing)})"
        return _resolved(action, self.replay(ctx, item, force=force), label)


class Contradiction(HeldProposal):
    name = "contradiction"
    actions = (
        Action("supersede", "e", "the proposal is right now: it replaces the current item (kept as history)"),
        Action("confirm", "c", "both hold (different cases): add the proposal beside it"),
        Action("reject", "r", "the current item stands: drop the proposal"),
        SNOOZE,
    )

    def summary(self, item: CurationItem) -> tuple[str, str]:
        p = item.payload
        others = p.get("items") if isinstance(p.get("items"), list) else []
        against = "; ".join(f"#{o.get('item_id')} ({o.get('status')}) {o.get('title')!r}" for o in others
                            if isinstance(o, dict)) or f"#{p.get('item_id')}"
        return (self.proposal_line(item), f"says otherwise than {against}")

    def plan(self, ctx: EditContext, item: CurationItem, action: Action, args: dict) -> Plan:
        if action.name == "reject":
            return dismiss_plan(action, f"item #{item.payload.get('item_id')} stands; the proposal was dropped")
        if action.name == "snooze":
            return snooze_plan(ctx, action, args)
        existing = self.existing(item)
        force = f"supersede:{existing}" if action.name == "supersede" else "add"
        label = f"{action.name} ({_item_label(ctx.conn, existing)})"
        return _resolved(action, self.replay(ctx, item, force=force), label)


class MissingQuote(HeldProposal):
    name = "missing_quote"
    actions = (
        Action("answer", "a", "give the source's own words the statement rests on",
               (Arg("text", "text", "the quote"),)),
        Action("confirm", "c", "take it without a quote"),
        REJECT,
        SNOOZE,
    )

    def summary(self, item: CurationItem) -> tuple[str, str]:
        kind = (item.payload.get("source") or {}).get("type", "?")
        return (self.proposal_line(item), f"no quote from its source; {kind} proposals must give one "
                                          "(knowledge.quote_required_for)")

    def plan(self, ctx: EditContext, item: CurationItem, action: Action, args: dict) -> Plan:
        if action.name == "reject":
            return dismiss_plan(action, "the proposal was dropped")
        if action.name == "snooze":
            return snooze_plan(ctx, action, args)
        if action.name == "answer":
            # The owner read the proposal and gave its quote: that is a review, so it goes in confirmed.
            return _resolved(action, self.replay(ctx, item, force="add", quote=_text(args)), "quoted")
        return _resolved(action, self.replay(ctx, item, force="add"), "taken without a quote")


# -- the nightly steps' cards --------------------------------------------------------------

def _owner_submit(ctx: EditContext, data: dict) -> Decision:
    proposal = parse_proposal({"schema": "knowledge_proposal.v1", **{k: v for k, v in data.items() if v is not None}})
    return submit(ctx.conn, ctx.settings, proposal, Source.owner())


class GapQuestion(Kind):
    name = "gap_question"
    family = "knowledge"
    actions = (
        Action("answer", "a", "what is true about it (first line the statement, the rest detail): a confirmed item",
               (Arg("text", "text", "the statement"),
                Arg("type", "text", f"its type: {', '.join(TYPES)} (default fact)", required=False))),
        Action("reject", "r", "nothing worth recording: this note is not asked about again"),
        SNOOZE,
    )
    gone_reason = "the note has confirmed knowledge now, or it is gone"

    def detect(self, conn: apsw.Connection, settings: Settings, sources: dict) -> list[Candidate]:
        out = []
        for note in life.entity_notes_without_knowledge(conn, tuple(settings.knowledge.entity_types)):
            # More notes linking to it: more worth knowing. 0 links 0.3, 1 link 0.5, 3 links 0.6, -> 0.7.
            importance = round(0.3 + 0.4 * (1 - 1 / (1 + note.backlinks)), 4)
            payload = {"note": {"note_id": note.note_id, "path": note.path, "title": note.title, "type": note.type},
                       "backlinks": note.backlinks}
            out.append(Candidate(subject(note=note.note_id), note.note_id, payload, importance))
        return out

    def new_card_limit(self, conn: apsw.Connection, settings: Settings, waiting: int) -> int:
        """At most knowledge.max_gap_questions open or snoozed, most important first: a second run adds none."""
        return max(0, settings.knowledge.max_gap_questions - waiting)

    def summary(self, item: CurationItem) -> tuple[str, str]:
        note = item.payload["note"]
        return (f"{note['title']} ({note['type']})",
                f"what do you know about {note['title']}? No confirmed knowledge yet "
                f"({item.payload['backlinks']} note(s) link to it)")

    def plan(self, ctx: EditContext, item: CurationItem, action: Action, args: dict) -> Plan:
        if action.name == "reject":
            return dismiss_plan(action, f"{item.payload['note']['title']} is not asked about again")
        if action.name == "snooze":
            return snooze_plan(ctx, action, args)
        kind = args.get("type") or "fact"
        if kind not in TYPES:
            raise UnknownAction(f"--type must be one of {', '.join(TYPES)}, not {kind!r}")
        title, body = _statement(_text(args))
        decision = _owner_submit(ctx, {"type": kind, "title": title, "body": body,
                                       "about": item.payload["note"]["note_id"]})
        return _resolved(action, decision, f"recorded about {item.payload['note']['title']}")


class StaleItem(Kind):
    name = "stale"
    family = "knowledge"
    actions = (
        Action("confirm", "c", "it still holds: keep it (confirmed, the owner as its source)"),
        Action("supersede", "e", "replace it with what is true now",
               (Arg("text", "text", "the new statement (first line), with detail after it"),)),
        Action("reject", "r", "it no longer holds: retract it (kept as history)"),
        SNOOZE,
    )
    gone_reason = "the item's source text is back, or the item is no longer current"

    def detect(self, conn: apsw.Connection, settings: Settings, sources: dict) -> list[Candidate]:
        items = life.stale_items(conn)
        notes = life.note_titles(conn, [i.source_note_id for i in items if i.source_note_id])
        out = []
        for item in items:
            path, title = notes.get(item.source_note_id, (None, None))
            payload = {"item_id": item.item_id, "type": item.type, "title": item.title, "status": item.status,
                       "source_id": item.source_id, "source_path": path, "source_title": title,
                       "since": item.stale_since}
            importance = round(0.3 + 0.5 * item.importance, 4)
            out.append(Candidate(subject(item=item.item_id), item.source_note_id if path else None, payload,
                                 importance))
        return out

    def summary(self, item: CurationItem) -> tuple[str, str]:
        p = item.payload
        where = p["source_path"] or "a note that is gone"
        return (f"#{p['item_id']} {p['type']}: {p['title']}", f"its source in {where} changed or vanished")

    def plan(self, ctx: EditContext, item: CurationItem, action: Action, args: dict) -> Plan:
        if action.name == "snooze":
            return snooze_plan(ctx, action, args)
        item_id = item.payload["item_id"]
        current = life.get_item(ctx.conn, item_id)
        if current is None:
            raise UnknownAction(f"item {item_id} does not exist")
        answer = {"by": "owner", "action": action.name, "knowledge_item": item_id}
        if action.name == "supersede":
            title, body = _statement(_text(args))
            about = current.about_note_id or (f"topic:{current.about_topic}" if current.about_topic else None)
            decision = _owner_submit(ctx, {"type": current.type, "title": title, "body": body, "about": about,
                                           "supersedes": item_id})
            return _resolved(action, decision, f"item #{item_id} superseded")
        now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        with ctx.conn:
            if action.name == "confirm":
                boosted = min(1.0, current.importance + ctx.settings.knowledge.importance_boost)
                life.keep_as_owner(ctx.conn, item_id, boosted, now)
                life.log_decision(ctx.conn, now, "owner", "owner", f'{{"item_id": {item_id}}}', "update",
                                  "the owner keeps it though its source changed", item_id, item.item_id)
                return Plan("resolved", answer, f"item #{item_id} kept")
            life.retract(ctx.conn, item_id, now)
            life.log_decision(ctx.conn, now, "owner", "owner", f'{{"item_id": {item_id}}}', "stale",
                              "the owner retracted it: it no longer holds", item_id, item.item_id)
        return Plan("resolved", answer, f"item #{item_id} retracted (kept as history)")


KNOWLEDGE_KINDS = (UnresolvedEntity(), Duplicate(), Contradiction(), MissingQuote(), GapQuestion(), StaleItem())
GAP_KINDS = (GapQuestion.name,)
STALE_KINDS = (StaleItem.name,)


def register_kinds() -> None:
    """Add the knowledge kinds to the curation queue (idempotent)."""
    for kind in KNOWLEDGE_KINDS:
        register(kind)


register_kinds()
