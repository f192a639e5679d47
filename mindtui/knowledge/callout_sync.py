"""Keep the items that knowledge callouts state in step with the notes (run after each import).

The callouts are read from the stored chunks of notes a model may read (`ai_processing: none`
notes are never read: no items from them, and their existing items are left alone). For each
note, its callouts are matched with the current items they stated:
1. a callout whose statement is unchanged keeps its item (a moved callout only moves the item's
   chunk; a stale flag is cleared when the callout is back);
2. a callout already handled otherwise is left alone: it corroborated an existing item (the
   writer's NOOP), its item was superseded or retracted since (history: the owner decided), or
   the writer filed a card for it (the owner decides; an answer is final);
3. an edited callout supersedes the item of the same type it replaces (in order of position);
4. a new callout is proposed to the writer (`submit`, the note and chunk as its source);
5. an item whose callout is gone (or whose note is gone) is flagged stale: a card asks the owner.
A second run over unchanged notes changes nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import apsw

from mindtui.config import Settings
from mindtui.curation.kinds import now_iso
from mindtui.errors import InputError
from mindtui.knowledge.callouts import Callout, parse_callouts
from mindtui.store import knowledge_lifecycle_store as life
from mindtui.store.batch import immediate

SCHEMA = "knowledge_proposal.v1"


@dataclass
class CalloutReport:
    callouts: int = 0
    unchanged: int = 0
    moved: int = 0
    restored: int = 0
    held: int = 0  # left alone: corroborated before, or a card holds it
    decisions: dict = field(default_factory=dict)  # the writer's decisions by name (add, supersede, noop, card, ...)
    stale: int = 0
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def callout_key(note_id: str, kind: str, ordinal: int) -> str:
    return f"{note_id}{life.CALLOUT_MARK}{kind}:{ordinal}"


def _norm(text: str | None) -> str:
    return " ".join((text or "").split()).casefold()


def _same_statement(callout: Callout, kind: str, title: str, body: str | None) -> bool:
    return kind == callout.type and _norm(title) == _norm(callout.title) and _norm(body) == _norm(callout.body)


def _note_callouts(chunks: list[life.CalloutChunk]) -> dict[str, list[tuple[int, Callout]]]:
    out: dict[str, list[tuple[int, Callout]]] = {}
    for chunk in chunks:
        for callout in parse_callouts(chunk.text):
            out.setdefault(chunk.note_id, []).append((chunk.seq, callout))
    return out


class CalloutSync:
    def __init__(self, conn: apsw.Connection, settings: Settings, embedder=None, now: str | None = None) -> None:
        self.conn = conn
        self.settings = settings
        self.entity_types = frozenset(settings.knowledge.entity_types)
        self.embedder = embedder
        self.now = now or now_iso()
        self.report = CalloutReport()

    def run(self) -> CalloutReport:
        found = _note_callouts(life.callout_chunks(self.conn))
        items: dict[str, list[life.LifeItem]] = {}
        for item in life.callout_items(self.conn):
            items.setdefault(item.source_note_id or "", []).append(item)
        consent = life.note_consent(self.conn)
        for note_id in sorted(set(found) | set(items)):
            if note_id in consent and not consent[note_id][0]:
                continue  # ai_processing: none
            note_type = consent[note_id][1] if note_id in consent else None
            self._note(note_id, note_type, found.get(note_id, []), items.get(note_id, []))
        return self.report

    # -- one note ----------------------------------------------------------------------------
    def _note(self, note_id: str, note_type: str | None, callouts: list[tuple[int, Callout]],
              items: list[life.LifeItem]) -> None:
        ordinals: dict[str, int] = {}
        keyed = []
        for seq, callout in callouts:
            ordinals[callout.type] = ordinals.get(callout.type, 0) + 1
            keyed.append((callout_key(note_id, callout.type, ordinals[callout.type]), seq, callout))
        self.report.callouts += len(keyed)
        remaining = list(items)
        pending = []
        with immediate(self.conn):
            for key, seq, callout in keyed:
                match = next((i for i in remaining if i.source_hash == callout.text_hash), None)
                if match is None:
                    pending.append((key, seq, callout))
                    continue
                remaining.remove(match)
                self._keep(match, seq)
        held = life.held_proposals(self.conn, [key for key, _, _ in pending])
        fresh = []
        for key, seq, callout in pending:
            if self._handled(key, callout, held.get(key, [])):
                self.report.held += 1
            else:
                fresh.append((key, seq, callout))
        for key, seq, callout in fresh:
            replaced = next((i for i in remaining if i.type == callout.type), None)
            if replaced is not None:
                remaining.remove(replaced)
            self._submit(note_id, note_type, key, seq, callout, replaced)
        if remaining:
            with immediate(self.conn):
                for item in remaining:
                    self._stale(item, "its callout is gone from the note" if note_type else "its note is gone")

    def _keep(self, item: life.LifeItem, seq: int) -> None:
        self.report.unchanged += 1
        if item.source_chunk_seq != seq:
            life.set_source_position(self.conn, item.item_id, seq, self.now)
            self._log(item, "update", f"callout moved to chunk {seq}")
            self.report.moved += 1
        if item.stale_since is not None:
            life.set_stale(self.conn, item.item_id, None, self.now)
            self._log(item, "update", "its callout is back as it was")
            self.report.restored += 1

    def _handled(self, key: str, callout: Callout, held: list[dict]) -> bool:
        for item_id in life.items_with_source(self.conn, "note", key):
            item = life.get_item(self.conn, item_id)
            if item is not None and _same_statement(callout, item.type, item.title, item.body):
                return True
        return any(_same_statement(callout, p.get("type"), str(p.get("title", "")), p.get("body")) for p in held)

    def _stale(self, item: life.LifeItem, why: str) -> None:
        if item.stale_since is not None:
            return
        life.set_stale(self.conn, item.item_id, self.now, self.now)
        self._log(item, "stale", why)
        self.report.stale += 1

    def _log(self, item: life.LifeItem, decision: str, reason: str) -> None:
        life.log_decision(self.conn, self.now, item.source_type, item.source_id,
                          json.dumps({"item_id": item.item_id}), decision, reason, item.item_id)

    def _submit(self, note_id: str, note_type: str | None, key: str, seq: int, callout: Callout,
                replaced: life.LifeItem | None) -> None:
        from mindtui.knowledge.proposal import ProposalError, Source, parse_proposal
        from mindtui.knowledge.writer import submit

        data = {"schema": SCHEMA, **callout.proposal()}
        if "about" not in data and note_type in self.entity_types:
            data["about"] = note_id  # a callout in a person's note is about that person
        if replaced is not None:
            data["supersedes"] = replaced.item_id
        source = Source("note", key, note_id=note_id, chunk_seq=seq, source_hash=callout.text_hash)
        try:
            proposal = parse_proposal(data)
        except ProposalError as exc:
            self._invalid(key, data, str(exc))
            return
        try:
            decision = submit(self.conn, self.settings, proposal, source, embedder=self.embedder)
        except InputError as exc:
            self.report.errors.append(f"{key}: {exc}")
            return
        counts = self.report.decisions
        counts[decision.decision] = counts.get(decision.decision, 0) + 1
        if replaced is not None and decision.decision != "supersede" and decision.item_id != replaced.item_id:
            # The edit was not taken as its successor (the same as another item, a card, invalid): the
            # item no longer has its callout, as the next run would find.
            with immediate(self.conn):
                self._stale(replaced, f"its callout changed ({decision.decision}: {decision.reason})")

    def _invalid(self, key: str, data: dict, reason: str) -> None:
        text = json.dumps(data, ensure_ascii=False, sort_keys=True)
        counts = self.report.decisions
        counts["invalid"] = counts.get("invalid", 0) + 1
        with immediate(self.conn):
            if not life.decision_exists(self.conn, "note", key, text, "invalid"):
                life.log_decision(self.conn, self.now, "note", key, text, "invalid", reason)


def sync_callouts(conn: apsw.Connection, settings: Settings, embedder=None, now: str | None = None) -> CalloutReport:
    return CalloutSync(conn, settings, embedder, now).run()
