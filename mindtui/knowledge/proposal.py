"""The proposal format (`knowledge_proposal.v1`) and where a proposal comes from.

A proposal is what an agent, a model, a callout or the owner hands the one writer
(`knowledge.writer.submit`): a typed, one-line statement with optional detail, quote and
subject. `parse_proposal` turns any input (a dict, JSON text, anything else) into a Proposal or
raises ProposalError with a message that says what is wrong; it never raises anything else.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
from dataclasses import dataclass

from mindtui.errors import InputError

SCHEMA = "knowledge_proposal.v1"
TYPES = ("fact", "decision", "learning", "playbook", "preference", "reference", "instruction")
VISIBILITIES = ("shared", "private")
SOURCE_TYPES = ("note", "agent", "owner", "job")
TOPIC_PREFIX = "topic:"


def topic_of(about: str | None) -> str | None:
    """The free topic of an `about` written "topic:<text>" (stripped; "" when the text is missing), else None."""
    if about is not None and about.startswith(TOPIC_PREFIX):
        return about[len(TOPIC_PREFIX):].strip()
    return None
MAX_TITLE = 300
MAX_BODY = 20_000
MAX_QUOTE = 4_000
MAX_ABOUT = 300
MAX_ITEM_ID = 2**63 - 1  # SQLite's largest integer: a larger id cannot name an item (and cannot be bound)
FIELDS = ("schema", "type", "title", "body", "quote", "about", "supersedes", "confidence", "visibility", "valid_from")


class ProposalError(InputError):
    """A proposal that cannot be used: the message says which field and why."""


@dataclass(frozen=True)
class Proposal:
    type: str
    title: str  # the statement, one line
    body: str = ""
    quote: str | None = None
    about: str | None = None  # an entity note's name/path/alias/id, or "topic:<text>" for a free topic
    supersedes: int | None = None
    confidence: float | None = None
    visibility: str = "shared"  # shared | private
    valid_from: str | None = None

    @property
    def topic(self) -> str | None:
        """The free topic of `about: "topic:<text>"`, else None."""
        return topic_of(self.about)

    def as_dict(self) -> dict:
        """The proposal in the v1 format (parse_proposal reads it back unchanged)."""
        data = {"schema": SCHEMA, **dataclasses.asdict(self)}
        return {k: v for k, v in data.items() if v is not None and not (k == "body" and v == "")}


@dataclass(frozen=True)
class Source:
    type: str  # note | agent | owner | job
    id: str  # note: '<note_id>#<key>'; agent: 'agent:<name>'; owner: 'owner'; job: 'job:<run>'
    note_id: str | None = None
    chunk_seq: int | None = None
    source_hash: str | None = None
    run_id: int | None = None

    @classmethod
    def owner(cls) -> "Source":
        return cls("owner", "owner")

    @classmethod
    def agent(cls, name: str) -> "Source":
        return cls("agent", f"agent:{name}")

    @classmethod
    def job(cls, run_id: int) -> "Source":
        return cls("job", f"job:{run_id}", run_id=run_id)

    @classmethod
    def note(cls, note_id: str, key: str, chunk_seq: int | None = None, source_hash: str | None = None) -> "Source":
        return cls("note", f"{note_id}#{key}", note_id=note_id, chunk_seq=chunk_seq, source_hash=source_hash)

    @classmethod
    def from_dict(cls, data: dict) -> "Source":
        return check_source(cls(**{f.name: data.get(f.name) for f in dataclasses.fields(cls)}))

    @classmethod
    def parse(cls, text: str) -> "Source":
        """`owner`, `agent:NAME` or `job:RUN` as a command line gives it (notes are sources only by import)."""
        text = (text or "").strip()
        if text == "owner":
            return cls.owner()
        if text.startswith("agent:") and text[len("agent:"):].strip():
            return cls.agent(text[len("agent:"):].strip())
        if text.startswith("job:") and text[len("job:"):].isdigit():
            return cls.job(int(text[len("job:"):]))
        raise ProposalError(f"unknown source {text!r}: use owner, agent:NAME or job:RUN")

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def check_source(source: Source) -> Source:
    """ProposalError for a source whose parts do not fit its type."""
    if source.type not in SOURCE_TYPES:
        raise ProposalError(f"unknown source type {source.type!r}; expected one of {', '.join(SOURCE_TYPES)}")
    if not isinstance(source.id, str) or not source.id:
        raise ProposalError("a source needs an id")
    if source.type == "note":
        if not source.note_id or not source.id.startswith(f"{source.note_id}#"):
            raise ProposalError(f"a note source's id must be '<note_id>#<key>' of its note, not {source.id!r}")
    elif source.type == "agent" and (not source.id.startswith("agent:") or len(source.id) <= len("agent:")):
        raise ProposalError(f"an agent source's id must be 'agent:<name>', not {source.id!r}")
    elif source.type == "owner" and source.id != "owner":
        raise ProposalError(f"the owner's source id is 'owner', not {source.id!r}")
    elif source.type == "job" and not source.id.startswith("job:"):
        raise ProposalError(f"a job source's id must be 'job:<run>', not {source.id!r}")
    return source


def _text(data: dict, name: str, limit: int, required: bool = False, one_line: bool = False) -> str | None:
    value = data.get(name)
    if value is None:
        if required:
            raise ProposalError(f"{name}: required")
        return None
    if not isinstance(value, str):
        raise ProposalError(f"{name}: expected text, got {type(value).__name__}")
    value = value.strip()
    if "\x00" in value:
        raise ProposalError(f"{name}: contains a NUL character")
    if one_line and len(value.splitlines()) > 1:  # \n, \r, and what else Python breaks a line at (U+2028)
        raise ProposalError(f"{name}: must be one line (put detail in body)")
    if len(value) > limit:
        raise ProposalError(f"{name}: longer than {limit} characters")
    if required and not value:
        raise ProposalError(f"{name}: must not be empty")
    return value


def _valid_from(value) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ProposalError(f"valid_from: expected an ISO date or time, got {type(value).__name__}")
    text = value.strip()
    try:
        if len(text) == 10:
            datetime.date.fromisoformat(text)
        else:
            datetime.datetime.fromisoformat(text)
    except ValueError:
        raise ProposalError(f"valid_from: {value!r} is not an ISO date (2026-11-30) or time") from None
    return text


def _parse(data: object) -> Proposal:
    if isinstance(data, (bytes, bytearray)):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ProposalError("not UTF-8 text") from None
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except (ValueError, RecursionError) as exc:
            raise ProposalError(f"invalid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ProposalError(f"a proposal is a JSON object, not {type(data).__name__}")
    schema = data.get("schema")
    if schema != SCHEMA:
        raise ProposalError(f"schema: expected {SCHEMA!r}, got {schema!r}" if schema is not None
                            else f"schema: required ({SCHEMA!r})")
    unknown = sorted(str(k) for k in data if k not in FIELDS)
    if unknown:
        raise ProposalError(f"unknown field(s) {', '.join(unknown)[:200]}; {SCHEMA} has {', '.join(FIELDS)}")
    kind = data.get("type")
    if kind not in TYPES:
        raise ProposalError(f"type: expected one of {', '.join(TYPES)}, got {str(kind)[:60]!r}")
    title = _text(data, "title", MAX_TITLE, required=True, one_line=True)
    body = _text(data, "body", MAX_BODY) or ""
    quote = _text(data, "quote", MAX_QUOTE) or None
    about = _text(data, "about", MAX_ABOUT, one_line=True) or None
    if topic_of(about) == "":
        raise ProposalError("about: 'topic:' needs the topic's text")
    supersedes = data.get("supersedes")
    if supersedes is not None and (isinstance(supersedes, bool) or not isinstance(supersedes, int)
                                   or not 1 <= supersedes <= MAX_ITEM_ID):
        raise ProposalError(f"supersedes: expected an item id (a positive whole number), got {str(supersedes)[:40]!r}")
    confidence = data.get("confidence")
    if confidence is not None:
        if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not math.isfinite(confidence) \
                or not 0.0 <= confidence <= 1.0:
            raise ProposalError(f"confidence: expected a number from 0 to 1, got {str(confidence)[:40]!r}")
        confidence = float(confidence)
    visibility = data.get("visibility", "shared")
    if visibility not in VISIBILITIES:
        raise ProposalError(f"visibility: expected shared or private, got {str(visibility)[:40]!r}")
    return Proposal(kind, title, body, quote, about, supersedes, confidence, visibility,
                    _valid_from(data.get("valid_from")))


def parse_proposal(data: object) -> Proposal:
    """A Proposal from a dict or JSON text in the v1 format; ProposalError (only) for anything else."""
    try:
        return _parse(data)
    except ProposalError:
        raise
    except Exception as exc:  # the validator's promise: one kind of error, whatever the input
        raise ProposalError(f"unusable proposal ({type(exc).__name__}: {str(exc)[:200]})") from None
