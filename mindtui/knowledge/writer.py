"""The one writer of knowledge items: every proposal is validated here and gets a decision.

Order of the rules (the first that applies decides; README "Knowledge" lists them for users):
1. invalid: the proposal does not validate, the source is malformed, a note source is not in
   the index or has `ai_processing: none` (consent: nothing is taken from such a note), or
   `supersedes` names no current item.
2. card `unresolved_entity`: `about` names no entity note (or several); an entity is never created.
3. noop / update: the same statement (type, normalised title and body, subject) is current
   already. From another source it counts as corroboration (the source is recorded; the owner
   corroborating a draft confirms it); from the same source it refreshes where the statement
   stands (chunk, hash, stale flag) and its quote/confidence/visibility/valid_from ('update'
   when one of those changed).
4. card `missing_quote`: the source type needs a quote (`knowledge.quote_required_for`).
5. supersede: `supersedes` given. A confirmed item of another source is superseded only by the
   owner; anyone else gets a `contradiction` card for the owner to decide.
6. card `duplicate`: a current item on the same subject is nearly the same statement (cosine of
   the embedded texts, else of their stem counts, at least `knowledge.near_duplicate_cosine`).
7. card `contradiction`: a decision or preference with the same subject and type as a current
   item of another source says something else.
8. add: as a draft, confirmed when the owner is the source.
A card's answer replays its proposal with `force` ('add', 'supersede:<id>', 'merge:<id>'):
the checks that file cards are skipped and the result is confirmed (the owner decided);
validation, consent and exact duplicates still apply. Every decision is logged with its reason.
"""

from __future__ import annotations

import dataclasses
import datetime
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable

import apsw
import numpy as np

from mindtui.config import Settings
from mindtui.knowledge.proposal import Proposal, ProposalError, Source, check_source, parse_proposal
from mindtui.knowledge.subjects import Subject, resolve_about, statement_hash, vector_cosine, word_cosine
from mindtui.store import curation_store
from mindtui.store import knowledge_store as store
from mindtui.store import vectors as vector_store
from mindtui.store.batch import immediate
from mindtui.store.meta import EMBEDDING_MODEL_KEY, get_meta

DECISIONS = ("add", "supersede", "noop", "card", "invalid", "update", "stale")
CARD_KINDS = ("unresolved_entity", "duplicate", "contradiction", "missing_quote")
CONTRADICTION_TYPES = ("decision", "preference")
CARD_IMPORTANCE = {"contradiction": 0.8, "unresolved_entity": 0.6, "duplicate": 0.4, "missing_quote": 0.3}
DEFAULT_CONFIDENCE = 0.5  # a proposal that does not say; the owner's own statements: 1.0
DEFAULT_IMPORTANCE = 0.5


@dataclass
class Decision:
    decision: str  # add | supersede | noop | card | invalid | update | stale
    reason: str
    item_id: int | None = None
    card_id: int | None = None
    # An 'invalid' that the validator gave: its reason depends on the proposal's own text only
    # (the rules' reasons may name items and notes). Not part of what is shown or logged.
    own_input: bool = dataclasses.field(default=False, repr=False, compare=False)

    def as_dict(self) -> dict:
        return {"decision": self.decision, "reason": self.reason, "item_id": self.item_id, "card_id": self.card_id}


def now_iso() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


@contextmanager
def _transaction(conn: apsw.Connection):
    """Its own IMMEDIATE transaction, or a savepoint inside the caller's (an import, a card's answer)."""
    if conn.in_transaction:
        with conn:
            yield
    else:
        with immediate(conn):
            yield


def _parse_force(force: str | None) -> tuple[str | None, int | None]:
    if force is None:
        return None, None
    if force == "add":
        return "add", None
    name, _, number = force.partition(":")
    if name in ("supersede", "merge") and number.isdigit():
        return name, int(number)
    raise ProposalError(f"force must be 'add', 'supersede:<item id>' or 'merge:<item id>', not {force!r}")


@dataclass
class _Ctx:
    conn: apsw.Connection
    settings: Settings
    proposal: Proposal
    source: Source
    force: str | None
    target: int | None
    vector: np.ndarray | None
    model_id: str | None
    now: str
    notes: list[str]  # remarks for the reason (an embedding that failed, ...)
    about_conn: apsw.Connection  # where `about` is resolved (the proposer's view of the notes)
    agents_only: bool = False  # compared only with items agents may see (_comparable)


def submit(conn: apsw.Connection, settings: Settings, proposal: Proposal, source: Source, *, embedder=None,
           force: str | None = None, about_conn: apsw.Connection | None = None,
           item_row: Callable[[int], int] | None = None) -> Decision:
    """Decide what becomes of one proposal (see the module docstring) and log the decision. The
    proposal may also be given as it was received (a dict, JSON text): one that does not validate
    is logged and decided 'invalid' with the validator's message. about_conn: the connection `about`
    is resolved on, i.e. the notes the proposer may see (an agent's: a hidden note is no entity to
    it); default `conn`. item_row: the row id of the item the proposer's `supersedes` number names
    (an agent is told other numbers: service.item_ids), once the proposal is valid."""
    now = now_iso()
    raw = _raw(proposal)
    try:
        proposal = parse_proposal(proposal.as_dict() if isinstance(proposal, Proposal) else proposal)
        source = check_source(source)
        how, target = _parse_force(force)
    except ProposalError as exc:
        with _transaction(conn):
            return _log(conn, now, source, raw, Decision("invalid", str(exc), own_input=True))
    if item_row is not None and proposal.supersedes is not None:
        proposal = dataclasses.replace(proposal, supersedes=item_row(proposal.supersedes))
    notes: list[str] = []
    vector = _embed(conn, embedder, proposal, source, notes) if how is None else None
    ctx = _Ctx(conn, settings, proposal, source, how, target, vector,
               getattr(embedder, "model_id", None), now, notes, about_conn or conn)
    with _transaction(conn):
        decision = _decide(ctx)
        if ctx.notes:
            decision.reason += " (" + "; ".join(ctx.notes) + ")"
        return _log(conn, now, source, raw, decision)


def _raw(proposal) -> str:
    if isinstance(proposal, str):
        return proposal[:100_000]
    if isinstance(proposal, Proposal):
        return store.decision_json(proposal.as_dict())
    try:
        return store.decision_json(proposal)
    except (TypeError, ValueError):
        return repr(proposal)[:10_000]


def _log(conn, now: str, source, raw: str, decision: Decision) -> Decision:
    source_type = getattr(source, "type", None)
    source_id = getattr(source, "id", None)
    store.record_decision(conn, now, str(source_type), str(source_id), raw, decision.decision, decision.reason,
                          decision.item_id, decision.card_id)
    return decision


def _embed(conn, embedder, proposal: Proposal, source: Source, notes: list[str]) -> np.ndarray | None:
    """The proposal's vector (the text the sweep would embed), unless its source note may not be read by a model."""
    if embedder is None:
        return None
    if source.type == "note":
        note = store.source_note(conn, source.note_id or "")
        if note is None or not note.ai_processing:
            return None
    try:
        return np.asarray(embedder.embed_passages([store.item_passage(proposal.title, proposal.body)])[0],
                          dtype=np.float32)
    except Exception as exc:  # a model failure costs the vector comparison, never the proposal
        notes.append(f"embedding failed ({type(exc).__name__}: {exc}): compared by words")
        return None


# -- the rules ----------------------------------------------------------------------------

def _decide(ctx: _Ctx) -> Decision:
    conn, proposal, source = ctx.conn, ctx.proposal, ctx.source
    from_seen_note = False  # stated in a note agents may see
    if source.type == "note":
        note = store.source_note(conn, source.note_id or "")
        if note is None:
            return Decision("invalid", f"source note {source.note_id} is not in the index")
        if not note.ai_processing:
            return Decision("invalid", f"consent: {note.path} has `ai_processing: none`; nothing is taken from it")
        from_seen_note = not note.private
    subject = resolve_about(ctx.about_conn, proposal.about, tuple(ctx.settings.knowledge.entity_types),
                            any_note=ctx.force is not None, for_agents_too=from_seen_note)
    if subject.unresolved is not None:
        if ctx.force is not None:
            return Decision("invalid", f"about {proposal.about!r} names no single note")
        return _card(ctx, "unresolved_entity", subject, _unresolved_reason(subject, ctx.settings),
                     {"name": subject.unresolved, "candidates": list(subject.candidates)}, statement_hash(proposal, subject))
    ctx.agents_only = _seen_by_agents(ctx, subject)
    target_id = ctx.target if ctx.force in ("supersede", "merge") else proposal.supersedes
    target = store.get_item(conn, target_id) if target_id is not None else None
    if target_id is not None:
        if target is None:
            return Decision("invalid", f"item {target_id} does not exist")
        if not target.is_current:
            return Decision("invalid", f"item {target_id} is no longer current (superseded by {target.superseded_by})")
    if ctx.force == "merge":
        return _corroborate(ctx, target, "merged into item {id} by the owner")
    digest = statement_hash(proposal, subject)
    same = _comparable(ctx, store.current_with_statement(conn, digest))
    if same:
        return _same_statement(ctx, same[0])
    if ctx.force is None and source.type in ctx.settings.knowledge.quote_required_for and not proposal.quote:
        return _card(ctx, "missing_quote", subject, f"{source.type} proposals need a quote from their source",
                     {"required_for": list(ctx.settings.knowledge.quote_required_for)}, digest)
    if target is not None:
        foreign = target.status == store.CONFIRMED and target.source_id != source.id
        if ctx.force is None and foreign and source.type != "owner":
            return _card(ctx, "contradiction", subject, f"supersedes confirmed item {target.item_id} of another source:"
                         " the owner decides", {"item_id": target.item_id, "items": [_summary(target)]}, digest, item_key=target.item_id)
        return _add(ctx, subject, digest, target)
    if ctx.force is None:
        duplicate = _near_duplicate(ctx, subject)
        if duplicate is not None:
            item, similarity, method = duplicate
            return _card(ctx, "duplicate", subject,
                         f"nearly the same as item {item.item_id} ({method} cosine {similarity:.3f} >= "
                         f"{ctx.settings.knowledge.near_duplicate_cosine})",
                         {"item_id": item.item_id, "item": _summary(item), "similarity": round(similarity, 4), "method": method,
                          "threshold": ctx.settings.knowledge.near_duplicate_cosine}, digest, item_key=item.item_id)
        conflicting = _contradicting(ctx, subject)
        if conflicting:
            ids = ", ".join(str(i.item_id) for i in conflicting)
            return _card(ctx, "contradiction", subject,
                         f"another {proposal.type} on the same subject is current (item {ids}): the owner decides",
                         {"item_id": conflicting[0].item_id, "items": [_summary(i) for i in conflicting]}, digest, item_key=conflicting[0].item_id)
    return _add(ctx, subject, digest, None)


def _seen_by_agents(ctx: _Ctx, subject: Subject) -> bool:
    """A note's statement (a callout) that agents will see as an item: shared, from a note and
    about a note agents may see. It is compared with the items agents may see only: were it
    taken as the same as, near or against an item stated only in a private note, an agent would
    find no item (or a card) where, without that note, it finds this one."""
    notes = [n for n in (ctx.source.note_id, subject.note_id) if n]
    return (ctx.source.type == "note" and ctx.proposal.visibility == "shared"
            and all(store.note_open_to_agents(ctx.conn, n) for n in notes))


def _comparable(ctx: _Ctx, items: list[store.KnowledgeItem]) -> list[store.KnowledgeItem]:
    if not ctx.agents_only or not items:
        return items
    seen = store.open_to_agents(ctx.conn, [i.item_id for i in items])
    return [i for i in items if i.item_id in seen]


def _unresolved_reason(subject: Subject, settings: Settings) -> str:
    types = ", ".join(settings.knowledge.entity_types)
    if not subject.candidates:
        return f"about {subject.unresolved!r} names no note; entities are never created ({types})"
    if len(subject.candidates) > 1:
        return f"about {subject.unresolved!r} names {len(subject.candidates)} notes: which one?"
    only = subject.candidates[0]
    return f"about {subject.unresolved!r} names {only['path']}, a {only['type']} note, not an entity ({types})"


def _summary(item: store.KnowledgeItem) -> dict:
    return {"item_id": item.item_id, "type": item.type, "title": item.title, "status": item.status,
            "source_id": item.source_id, "quote": item.quote}


def _same_statement(ctx: _Ctx, item: store.KnowledgeItem) -> Decision:
    source, proposal = ctx.source, ctx.proposal
    if item.source_id != source.id:
        return _corroborate(ctx, item, "the same statement as item {id}: counted as corroboration")
    changes = {}
    if source.type == "note":
        changes.update(source_chunk_seq=source.chunk_seq, source_hash=source.source_hash, stale_since=None)
    for name in ("quote", "visibility", "valid_from"):
        value = getattr(proposal, name)
        if value is not None and value != getattr(item, name):
            changes[name] = value
    if proposal.confidence is not None and proposal.confidence != item.confidence:
        changes["confidence"] = proposal.confidence
    changed = sorted(name for name, value in changes.items() if getattr(item, name) != value)
    store.add_source(ctx.conn, item.item_id, source.type, source.id, ctx.now)
    if not changed:
        return Decision("noop", f"unchanged: item {item.item_id} states this already", item.item_id)
    store.update_item(ctx.conn, item.item_id, ctx.now, **{name: changes[name] for name in changed})
    return Decision("update", f"item {item.item_id} updated from its source: {', '.join(changed)}", item.item_id)


def _corroborate(ctx: _Ctx, item: store.KnowledgeItem, reason: str) -> Decision:
    new = store.add_source(ctx.conn, item.item_id, ctx.source.type, ctx.source.id, ctx.now)
    reason = reason.format(id=item.item_id) + ("" if new else " (this source had stated it already)")
    if item.status == store.DRAFT and (ctx.source.type == "owner" or ctx.force is not None):
        store.update_item(ctx.conn, item.item_id, ctx.now, status=store.CONFIRMED, importance_at=ctx.now)
        reason += "; confirmed by the owner"
    return Decision("noop", reason, item.item_id)


def _near_duplicate(ctx: _Ctx, subject: Subject) -> tuple[store.KnowledgeItem, float, str] | None:
    others = _comparable(ctx, store.current_on_subject(ctx.conn, subject.note_id, subject.topic_key))
    if not others:
        return None
    threshold = ctx.settings.knowledge.near_duplicate_cosine
    best: tuple[store.KnowledgeItem, float, str] | None = None
    vectors = _vectors_of(ctx, others) if ctx.vector is not None else {}
    text = store.item_passage(ctx.proposal.title, ctx.proposal.body)
    for item in others:
        if item.item_id in vectors:
            similarity, method = vector_cosine(ctx.vector, vectors[item.item_id]), "vector"
        else:
            similarity, method = word_cosine(text, store.item_passage(item.title, item.body)), "word"
        if similarity >= threshold and (best is None or similarity > best[1]):
            best = (item, similarity, method)
    if best is not None and ctx.vector is None:
        ctx.notes.append("compared by words: no embedding model at hand")
    return best


def _vectors_of(ctx: _Ctx, items: list[store.KnowledgeItem]) -> dict[int, np.ndarray]:
    """Stored vectors of the items (same model); none for items whose source note a model may not read."""
    blobs = store.item_vectors(ctx.conn, [i.item_id for i in items], ctx.model_id or "")
    return {item_id: np.frombuffer(blob, dtype=np.float32) for item_id, blob in blobs.items()}


def _contradicting(ctx: _Ctx, subject: Subject) -> list[store.KnowledgeItem]:
    if ctx.proposal.type not in CONTRADICTION_TYPES or (subject.note_id is None and subject.topic is None):
        return []
    return [item for item in _comparable(ctx, store.current_on_subject(ctx.conn, subject.note_id, subject.topic_key))
            if item.type == ctx.proposal.type and item.source_id != ctx.source.id]


def _card(ctx: _Ctx, kind: str, subject: Subject, reason: str, extra: dict, digest: str,
          item_key: int | None = None) -> Decision:
    source = ctx.source
    parts = {"source": source.id, "statement": digest}
    if item_key is not None:
        parts["item"] = item_key
    if source.note_id:
        parts["note"] = source.note_id
    key = curation_store.subject_key(**parts)
    existing = store.card_by_subject(ctx.conn, kind, key)
    if existing is not None:
        card_id, status = existing
        if status in (curation_store.OPEN, curation_store.SNOOZED):
            return Decision("card", f"{reason} (card {card_id} is waiting already)", card_id=card_id)
        return Decision("noop", f"{reason}; the owner answered this before (card {card_id}, {status})", card_id=card_id)
    payload = {"proposal": ctx.proposal.as_dict(), "source": source.as_dict(), "reason": reason,
               "statement": ctx.proposal.title, "type": ctx.proposal.type, "about": ctx.proposal.about,
               "about_note_id": subject.note_id, **extra}
    curation_store.insert_item(ctx.conn, kind, key, subject.note_id or source.note_id, payload,
                               CARD_IMPORTANCE[kind], ctx.now)
    card_id = store.card_by_subject(ctx.conn, kind, key)[0]
    return Decision("card", reason, card_id=card_id)


def _add(ctx: _Ctx, subject: Subject, digest: str, target: store.KnowledgeItem | None) -> Decision:
    proposal, source, now = ctx.proposal, ctx.source, ctx.now
    owner = source.type == "owner" or ctx.force is not None
    content_hash = store.item_content_hash(proposal.title, proposal.body)
    values = {
        "type": proposal.type, "title": proposal.title, "body": proposal.body, "quote": proposal.quote,
        "about_note_id": subject.note_id, "about_topic": subject.topic,
        "status": store.CONFIRMED if owner else store.DRAFT, "is_current": True,
        "valid_from": proposal.valid_from or now, "ended_at": None, "superseded_by": None, "stale_since": None,
        "source_type": source.type, "source_id": source.id, "source_note_id": source.note_id,
        "source_chunk_seq": source.chunk_seq, "source_hash": source.source_hash, "run_id": source.run_id,
        "confidence": proposal.confidence if proposal.confidence is not None
        else (1.0 if source.type == "owner" else DEFAULT_CONFIDENCE),
        "visibility": proposal.visibility, "importance": DEFAULT_IMPORTANCE, "importance_at": now,
        "statement_hash": digest, "content_hash": content_hash, "created_at": now, "updated_at": now,
    }
    item_id = store.insert_item(ctx.conn, values, store.fts_text(proposal.title, proposal.body, proposal.quote))
    store.add_source(ctx.conn, item_id, source.type, source.id, now)
    _keep_vector(ctx, content_hash)
    status = values["status"]
    if target is not None:
        store.end_item(ctx.conn, target.item_id, item_id, now)
        why = "the owner decided" if ctx.force is not None else "as proposed"
        return Decision("supersede", f"supersedes item {target.item_id} ({why}); new item is {status}", item_id)
    why = "the owner decided" if ctx.force is not None else (
        "the owner is the source" if owner else "a draft until a second source or the owner confirms it")
    return Decision("add", f"added as {status} ({why})", item_id)


def _keep_vector(ctx: _Ctx, content_hash: str) -> None:
    """Store the proposal's vector at once when it is of the store's model (else the sweep embeds it)."""
    if ctx.vector is None or not ctx.model_id or ctx.vector.shape[0] != vector_store.VECTOR_DIM:
        return
    if get_meta(ctx.conn, EMBEDDING_MODEL_KEY) != ctx.model_id or store.has_vector(ctx.conn, ctx.model_id, content_hash):
        return
    vector_store.insert_vectors(ctx.conn, ctx.model_id, [content_hash], ctx.vector[None, :])


# -- steps of the lifecycle (the nightly job, callouts) ------------------------------------

def mark_stale(conn: apsw.Connection, item_id: int, reason: str, source: Source | None = None) -> Decision:
    """Flag a current item whose source text changed or vanished (a card asks the owner); logged as 'stale'."""
    now = now_iso()
    source = source or Source("job", "job:consolidate")
    with _transaction(conn):
        item = store.get_item(conn, item_id)
        if item is None or not item.is_current:
            return Decision("noop", f"item {item_id} is not current", item_id)
        if item.stale_since is None:
            store.update_item(conn, item_id, now, stale_since=now)
        return _log(conn, now, source, store.decision_json({"item_id": item_id}), Decision("stale", reason, item_id))


def confirm(conn: apsw.Connection, item_id: int, reason: str, source: Source | None = None) -> Decision:
    """A draft becomes confirmed (two independent sources agree, or the owner says so); logged as 'update'."""
    now = now_iso()
    source = source or Source.owner()
    with _transaction(conn):
        item = store.get_item(conn, item_id)
        if item is None or not item.is_current or item.status == store.CONFIRMED:
            return Decision("noop", f"item {item_id} is not a current draft", item_id)
        store.update_item(conn, item_id, now, status=store.CONFIRMED, stale_since=None, importance_at=now)
        return _log(conn, now, source, store.decision_json({"item_id": item_id}), Decision("update", reason, item_id))


def retire(conn: apsw.Connection, item_id: int, reason: str, superseded_by: int | None = None,
           source: Source | None = None) -> Decision:
    """End a current item (an exact duplicate superseded by its twin, a rejected statement); kept as history."""
    now = now_iso()
    source = source or Source.owner()
    with _transaction(conn):
        item = store.get_item(conn, item_id)
        if item is None or not item.is_current:
            return Decision("noop", f"item {item_id} is not current", item_id)
        store.end_item(conn, item_id, superseded_by, now)
        decision = Decision("supersede", reason, superseded_by if superseded_by is not None else item_id)
        return _log(conn, now, source, store.decision_json({"item_id": item_id, "superseded_by": superseded_by}),
                    decision)


def replace_fields(proposal: Proposal, **fields) -> Proposal:
    """A copy with some fields changed (a card's answer: about = the linked note, ...)."""
    return dataclasses.replace(proposal, **fields)
