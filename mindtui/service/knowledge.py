"""Knowledge items behind the service: proposals to the one writer, and views of the items.

Reads go through the service's pool (an agent's connection sees only the items it may: see
store.visibility). An agent's proposal is decided on a connection that reads as an agent: every
rule compares it with the items an agent may see only, so what it is told cannot depend on a
hidden item. What it is told back is cut further: fixed reasons (a reason names notes and items),
no ids of items it cannot see (card ids, yes), and for the items it sees other numbers than their
row ids, which count hidden items too (service.item_ids; it names items by those numbers).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterable

import apsw

from mindtui.audience import Audience
from mindtui.config import Settings
from mindtui.errors import InputError, ModelUnavailableError, NotAllowed, NotFound
from mindtui.graph.neighbours import find_note
from mindtui.knowledge.ingest import ingest_lines
from mindtui.knowledge.proposal import TYPES, Source, parse_proposal, topic_of
from mindtui.knowledge.subjects import Subject
from mindtui.knowledge.writer import Decision, submit
from mindtui.models.holder import READY, ModelHolder
from mindtui.service.item_ids import ItemIds
from mindtui.store import knowledge_store as store
from mindtui.store.connection import open_database
from mindtui.store.failures import store_errors
from mindtui.store.pool import ConnectionPool, PooledConnection

EDITABLE = ("type", "title", "body", "quote", "about", "confidence", "visibility", "valid_from")
AGENT_REASONS = {"add": "added as a draft", "supersede": "superseded as proposed", "noop": "known already",
                 "update": "updated", "card": "held for the owner's review", "stale": "flagged stale",
                 "invalid": "the item it names does not exist or is no longer current"}


@dataclass
class KnowledgeView:
    item_id: int
    type: str
    title: str
    body: str
    quote: str | None
    status: str  # draft | confirmed | superseded
    is_current: bool
    stale_since: str | None
    about: str | None  # a label: the entity note's title, or "topic: <text>"
    about_note_id: str | None
    about_path: str | None
    about_topic: str | None
    source_type: str
    source_id: str
    source_note_id: str | None
    source_path: str | None  # the note it was stated in (None: not a note, or a note gone or hidden)
    source_chunk_seq: int | None
    valid_from: str
    ended_at: str | None
    superseded_by: int | None
    confidence: float
    visibility: str
    importance: float
    created_at: str
    updated_at: str
    supersedes: list[dict] = field(default_factory=list)  # the chain back: items this one replaced, newest first
    superseded_chain: list[dict] = field(default_factory=list)  # the chain forward: what replaced it, in order
    sources: list[dict] = field(default_factory=list)  # every source that stated it
    decisions: list[dict] = field(default_factory=list)  # the writer's decisions about it (owner only)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def _brief(item: store.KnowledgeItem) -> dict:
    return {"item_id": item.item_id, "type": item.type, "title": item.title, "status": item.status,
            "is_current": item.is_current, "valid_from": item.valid_from, "ended_at": item.ended_at,
            "source_id": item.source_id}


def view_of(item: store.KnowledgeItem, notes: dict[str, tuple[str, str, str]]) -> KnowledgeView:
    about_path = about = None
    if item.about_note_id is not None:
        path, title, _ = notes.get(item.about_note_id, (None, None, None))
        about_path, about = path, title or item.about_note_id
    elif item.about_topic is not None:
        about = f"topic: {item.about_topic}"
    source_path = notes.get(item.source_note_id, (None,))[0] if item.source_note_id else None
    return KnowledgeView(item.item_id, item.type, item.title, item.body, item.quote, item.status, item.is_current,
                         item.stale_since, about, item.about_note_id, about_path, item.about_topic, item.source_type,
                         item.source_id, item.source_note_id, source_path, item.source_chunk_seq, item.valid_from,
                         item.ended_at, item.superseded_by, item.confidence, item.visibility, item.importance,
                         item.created_at, item.updated_at)


def views_of(conn: apsw.Connection, items: list[store.KnowledgeItem]) -> list[KnowledgeView]:
    notes = store.note_names(conn, [n for i in items for n in (i.about_note_id, i.source_note_id)])
    return [view_of(item, notes) for item in items]


class KnowledgeDesk:
    def __init__(self, settings: Settings, pool: ConnectionPool, audience: Audience, models: ModelHolder) -> None:
        self.settings = settings
        self.pool = pool
        self.audience = audience
        self.models = models

    # -- an agent's item numbers -------------------------------------------------------------
    @cached_property
    def _ids(self) -> ItemIds | None:
        """None for the owner (row ids)."""
        if self.audience is Audience.OWNER:
            return None
        with self.pool.connection() as pooled:
            return ItemIds.of(pooled.conn)

    def told_id(self, item_id: int | None) -> int | None:
        """The number this audience knows the item by."""
        return item_id if self._ids is None else self._ids.public(item_id)

    def _row_of(self, told: int) -> int:
        """The row id of the item the audience names `told` (0, no row, for a number out of range)."""
        return told if self._ids is None else (self._ids.row(told) or 0)

    def _owner_row_of(self, conn, told: int) -> int:
        """The owner names an item by its row id, or by the number an agent was told (an agent's
        message quotes those: `knowledge show` finds the item by either)."""
        if self._ids is not None or store.get_item(conn, told) is not None:
            return self._row_of(told)
        return ItemIds.of(conn).row(told) or 0

    def _told(self, views: list[KnowledgeView]) -> list[KnowledgeView]:
        if self._ids is not None:
            for view in views:
                view.item_id, view.superseded_by = self.told_id(view.item_id), self.told_id(view.superseded_by)
                for entry in view.supersedes + view.superseded_chain:
                    entry["item_id"] = self.told_id(entry["item_id"])
        return views

    # -- reading ---------------------------------------------------------------------------
    def list(self, about: str | None = None, type_: str | None = None, status: str | None = None,
             current_only: bool = True, limit: int | None = None) -> list[KnowledgeView]:
        if type_ is not None and type_ not in TYPES:
            raise InputError(f"unknown item type {type_!r}; choose from {', '.join(TYPES)}")
        if status is not None and status not in store.STATUSES:
            raise InputError(f"unknown status {status!r}; choose from {', '.join(store.STATUSES)}")
        topic = topic_of(about)
        if topic == "":
            raise InputError("about: 'topic:' needs the topic's text (topic:TEXT)")
        with self.pool.connection() as pooled:
            conn = pooled.conn
            subject = Subject(topic=topic) if topic is not None \
                else Subject(note_id=find_note(conn, about).note_id if about else None)
            items = store.list_items(conn, subject.note_id, type_, status, current_only and status != store.SUPERSEDED,
                                     limit, topic_key=subject.topic_key)
            return self._told(views_of(conn, items))

    def item(self, told: int) -> KnowledgeView:
        with self.pool.connection() as pooled:
            conn = pooled.conn
            item_id = self._owner_row_of(conn, told)
            item = store.get_item(conn, item_id)
            if item is None:
                raise NotFound(f"no knowledge item {told}")
            back, forward = store.predecessors(conn, item_id), store.successors(conn, item_id)
            view = views_of(conn, [item])[0]
            view.supersedes = [_brief(i) for i in back]
            view.superseded_chain = [_brief(i) for i in forward]
            view.sources = [dict(s.__dict__) for s in store.sources_of(conn, item_id)]
            view.decisions = [d.as_dict() for d in store.decisions_of(conn, [item_id, *(i.item_id for i in back)])]
        return self._told([view])[0]

    def for_note(self, name: str) -> list[KnowledgeView]:
        with self.pool.connection() as pooled:
            conn = pooled.conn
            ref = find_note(conn, name)
            return self._told(views_of(conn, store.items_of_note(conn, ref.note_id)))

    # -- proposing -------------------------------------------------------------------------
    def _source(self, source) -> Source:
        if source is None:
            source = "owner" if self.audience is Audience.OWNER else "agent:agent"
        if not isinstance(source, Source):
            source = Source.parse(str(source))
        if self.audience is not Audience.OWNER and source.type != "agent":
            raise NotAllowed(f"an agent proposes as agent:NAME, not as {source.id}")
        return source

    def embedder(self):
        """The process's embedder if it is loaded already (never waits for a load, never starts one)."""
        try:
            if self.models.states(self.settings)[0].status != READY:
                return None
            return self.models.embedder(self.settings, wait=False)
        except ModelUnavailableError:
            return None

    def _writing(self, source: Source):
        """The writer's connection. An agent's proposal, whoever hands it in, is decided only over
        what an agent may see: on a connection with the agent's views (the writer writes `main.`
        tables by name), so no rule compares it with, ends or corroborates a hidden item, and its
        `about` names only visible notes. Anyone else's: the pool's (the owner's, seeing all)."""
        if self.audience is Audience.OWNER and source.type != "agent":
            return self.pool.connection()
        return _agent_connection(self.pool.path, self.settings, self.pool.private_paths)

    def submit(self, proposal, source=None, force: str | None = None) -> Decision:
        source = self._source(source)
        if force is not None and self.audience is not Audience.OWNER:
            raise NotAllowed("only the owner answers for the writer (force)")
        with self._writing(source) as pooled:
            # A proposal that does not validate is logged by the writer as invalid, with its reason.
            decision = submit(pooled.conn, self.settings, proposal, source, embedder=self.embedder(), force=force,
                              item_row=self._row_of)
            return self._decision_told(decision)

    def ingest(self, lines: Iterable[str], source=None) -> list[dict]:
        source = self._source(source)
        with self._writing(source) as pooled:
            results = ingest_lines(pooled.conn, self.settings, lines, source, embedder=self.embedder(),
                                   item_row=self._row_of)
        return [{"line": number, **self._decision_told(decision).as_dict()} for number, decision in results]

    def edit(self, item_id: int, fields: dict) -> Decision:
        """The owner's edit: the item superseded by the edited one (confirmed)."""
        unknown = sorted(set(fields) - set(EDITABLE))
        if unknown:
            raise InputError(f"cannot edit {', '.join(unknown)}; editable: {', '.join(EDITABLE)}")
        with self.pool.connection() as pooled:
            item = store.get_item(pooled.conn, item_id)
            if item is None:
                raise NotFound(f"no knowledge item {item_id}")
            if not item.is_current:
                raise InputError(f"item {item_id} is no longer current (superseded by {item.superseded_by}); edit that")
            about = item.about_note_id or (f"topic:{item.about_topic}" if item.about_topic else None)
            data = {"schema": "knowledge_proposal.v1", "type": item.type, "title": item.title, "body": item.body,
                    "quote": item.quote, "about": about, "confidence": item.confidence,
                    "visibility": item.visibility, "valid_from": item.valid_from}
            data.update({k: v for k, v in fields.items() if v is not None})
            data["supersedes"] = item_id
            return submit(pooled.conn, self.settings, parse_proposal({k: v for k, v in data.items() if v is not None}),
                          Source.owner(), embedder=self.embedder(), force="add")

    def _decision_told(self, decision: Decision) -> Decision:
        """What the audience may be told of a decision. An agent: a fixed text per decision (a
        reason may name notes and items), the validator's message for a proposal that does not
        validate (it depends on the proposal's own text only), no ids of items it cannot see, its
        own numbers for those it sees."""
        if self.audience is Audience.OWNER or decision.own_input:
            return decision
        visible = decision.item_id is not None and self._agent_sees(decision.item_id)
        # No card id: a row id, it counts the owner's cards, and hidden notes decide some of them (a
        # visible note's link to a hidden one is no unresolved_link card), so it moved with them.
        return Decision(decision.decision, AGENT_REASONS.get(decision.decision, decision.decision),
                        self.told_id(decision.item_id) if visible else None, None, own_input=decision.own_input)

    def _agent_sees(self, item_id: int) -> bool:
        with self.pool.connection() as pooled:
            return store.get_item(pooled.conn, item_id) is not None


@contextmanager
def _agent_connection(path, settings: Settings, private_paths: tuple[str, ...]):
    """The connection an agent's proposal is decided on: it reads as an agent (the writer writes
    `main.` tables by name), never migrates (an agent's connection refuses an old schema) and
    honours database.read_only."""
    conn = open_database(path, busy_timeout_ms=settings.database.busy_timeout_ms, readonly=settings.database.read_only,
                         audience=Audience.AGENT, private_paths=private_paths)
    try:
        with store_errors(path):
            yield PooledConnection(conn)
    finally:
        conn.close()
