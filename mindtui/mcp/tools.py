"""The MCP tools: name, description, JSON schema of the arguments, and a function over the
service that answers with a compact JSON-able dict.

Plain synchronous code over `mindtui.service` (the server runs it in worker threads), so the
tools can be tried without the SDK. Arguments are checked against the tool's schema first; a
bad argument is a ToolInputError whose message names the field and what is expected.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Callable

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from mindtui.service import NEIGHBOUR_GROUPS, SEARCH_MODES, InputError, SearchOptions, Service

KNOWLEDGE_TYPES = ("fact", "decision", "learning", "playbook", "preference", "reference", "instruction")
KNOWLEDGE_STATUSES = ("draft", "confirmed", "superseded")
PROPOSAL_SCHEMA = "knowledge_proposal.v1"
TYPED_SIGNALS = ("relations", "type_defaults", "links_out", "backlinks")
MAX_NOTE_CHARS = 20_000


class ToolInputError(InputError):
    """Arguments that do not fit the tool's schema."""


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    schema: dict
    run: Callable[[Service, dict, str], dict]  # (service, arguments, client name) -> result
    writes: bool = False  # offered only with --allow-proposals

    @cached_property
    def validator(self) -> Draft202012Validator:
        return Draft202012Validator(self.schema)  # compiled once: compiling costs far more than checking

    def check(self, arguments: dict | None) -> dict:
        arguments = {} if arguments is None else arguments
        error = best_match(self.validator.iter_errors(arguments))
        if error is not None:
            where = ".".join(str(p) for p in error.absolute_path)
            raise ToolInputError(cut(f"bad arguments for {self.name}: {where + ': ' if where else ''}"
                                      f"{_shown_message(error)}"))
        # JSON Schema counts 5.0 as an integer; the service (and a slice) wants an int
        properties = self.schema.get("properties", {})
        return {key: int(value) if isinstance(value, float) and properties.get(key, {}).get("type") == "integer"
                else value for key, value in arguments.items()}


MAX_MESSAGE_CHARS = 400  # an error message quotes what it refuses: a 1 MB query must not come back whole


def cut(text: str, at: int = MAX_MESSAGE_CHARS) -> str:
    return text if len(text) <= at else f"{text[:at]}… ({len(text):,} characters)"


def _shown_message(error) -> str:
    """jsonschema's message, with the value it quotes cut short (a text's length is its own, not
    that of its quoted form)."""
    quoted = repr(error.instance)
    if len(quoted) <= 60:
        return error.message
    shown = f"{quoted[:60]}… ({len(error.instance):,} characters)" if isinstance(error.instance, str) else cut(quoted, 60)
    return error.message.replace(quoted, shown)


def _obj(properties: dict, required: tuple[str, ...] = ()) -> dict:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


NOTE_ARG = {"type": "string", "minLength": 1, "maxLength": 500,
            "description": "The note: its vault path (with or without .md), title, alias or id."}
LIMIT = {"type": "integer", "minimum": 1, "maximum": 50, "default": 10, "description": "How many results (1-50)."}
SIGNALS = {"type": "array", "uniqueItems": True, "items": {"enum": list(NEIGHBOUR_GROUPS)}}


def _compact(data: dict) -> dict:
    return {k: v for k, v in data.items() if v not in (None, "", [], {})}


def _result_dict(result) -> dict:
    data = result.as_dict()
    out = {"id": data.get("note_id"), "kind": data.get("kind") or "note", "item_id": data.get("item_id"),
           "path": data.get("path"), "title": data.get("title"), "type": data.get("note_type"),
           "score": round(float(data.get("score") or 0.0), 4), "snippet": data.get("snippet")}
    return _compact(out)


def _search_options(args: dict, kind: str | None) -> SearchOptions:
    filters = args.get("filters") or {}
    return SearchOptions(mode=args.get("mode", "hybrid"), limit=args.get("limit", 10), note_type=filters.get("type"),
                         tag=filters.get("tag"), path=filters.get("path"), kind=kind, wait_for_model=False)


def search(service: Service, args: dict, client: str) -> dict:
    kind = {"all": None, "notes": "notes", "knowledge": "knowledge"}[args.get("kind", "all")]
    response = service.search(args["query"], _search_options(args, kind))
    out = {"mode": response.mode, "results": [_result_dict(r) for r in response.results]}
    if response.notices:
        out["notices"] = response.notices
    return out


def neighbors(service: Service, args: dict, client: str) -> dict:
    view = service.neighbours(args["note"], tuple(args.get("signals") or NEIGHBOUR_GROUPS))
    limit = args.get("limit", 10)
    groups, omitted = {}, {}
    for group, entries in view.groups.items():
        if entries:
            groups[group] = [_neighbour(n) for n in entries[:limit]]
        if len(entries) > limit:
            omitted[group] = len(entries) - limit
    out = {"note": {"id": view.note_id, "path": view.path, "title": view.title}, "groups": groups}
    if omitted:
        out["omitted"] = omitted
    return out


def _neighbour(n) -> dict:
    data = n.as_dict()
    data["id"] = data.pop("note_id")
    for key in ("confidence", "weight", "cosine"):
        if isinstance(data.get(key), float):
            data[key] = round(data[key], 4)
    return _compact(data)


def get_note(service: Service, args: dict, client: str) -> dict:
    view = service.note(args["note"], with_chunks=bool(args.get("chunks")))
    limit = args.get("max_chars", MAX_NOTE_CHARS)
    out = {"id": view.note_id, "path": view.path, "title": view.title, "type": view.type, "tags": view.tags,
           "aliases": view.aliases, "frontmatter": view.frontmatter, "text": view.text[:limit],
           "truncated": len(view.text) > limit or None, "text_source": view.text_source}
    if args.get("chunks"):
        out["chunks"] = [_compact({"seq": c.seq, "heading": c.heading_path, "lines": [c.line_start, c.line_end],
                                   "tokens": c.token_count, "text": c.text}) for c in view.chunks]
    return _compact(out)


def _item_dict(item) -> dict:
    data = item.as_dict()
    keep = ("item_id", "type", "title", "body", "quote", "about", "status", "is_current", "confidence",
            "importance", "valid_from", "ended_at", "superseded_by", "source_type", "source_id", "source_path")
    return _compact({k: data.get(k) for k in keep})


def knowledge_search(service: Service, args: dict, client: str) -> dict:
    limit = args.get("limit", 10)
    if not args.get("query"):
        items = service.knowledge_list(about=args.get("about"), type=args.get("type"), status=args.get("status"),
                                       limit=limit)
        return {"items": [_item_dict(item) for item in items]}
    if args.get("about") or args.get("status"):
        raise ToolInputError("knowledge_search: give a query (current items, optionally of one type) or "
                             "about/status filters, not both")
    wanted = args.get("type")
    response = service.search(args["query"], _search_options({"limit": limit * 3 if wanted else limit}, "knowledge"))
    found = []
    for result in response.results:
        item = _item_dict(service.knowledge_item(result.item_id))
        if wanted is None or item.get("type") == wanted:
            found.append({**item, "score": round(result.score, 4)})
    out = {"items": found[:limit]}
    if response.notices:
        out["notices"] = response.notices
    return out


def context_pack(service: Service, args: dict, client: str) -> dict:
    return service.context_pack(note=args.get("note"), query=args.get("query"),
                                budget_tokens=args.get("budget_tokens", 2000), limit=args.get("limit", 5),
                                signals=tuple(args.get("signals") or TYPED_SIGNALS))


def propose_knowledge(service: Service, args: dict, client: str) -> dict:
    proposal = {"schema": PROPOSAL_SCHEMA, **args}
    data = service.knowledge_submit(proposal, source=f"agent:{client}").as_dict()
    return {"decision": data.get("decision"), "reason": data.get("reason"), "item_id": data.get("item_id"),
            "card_id": data.get("card_id"), "source": f"agent:{client}"}


TOOLS = (
    ToolSpec("search", "Search the owner's notes (and knowledge items) by words and meaning: the same hybrid "
             "ranking as `mindtui search`. Use it first to find what the vault says about something. Returns "
             "{mode, notices, results: [{id, kind, path, title, type, score, snippet}]} best first; a notice says "
             "when results come from full text only (model loading or unavailable).",
             _obj({"query": {"type": "string", "minLength": 1, "maxLength": 2000,
                             "description": "What to look for: words, a name, a phrase or a question (German or "
                                            "English). Any text is valid."},
                   "limit": LIMIT,
                   "mode": {"enum": list(SEARCH_MODES), "default": "hybrid",
                            "description": "hybrid (default: words + meaning), fts (words only) or vector (meaning)."},
                   "filters": _obj({"type": {"type": "string", "description": "Only notes of this type."},
                                    "tag": {"type": "string", "description": "Only notes with this tag."},
                                    "path": {"type": "string", "description": "Only notes under this vault folder."}}),
                   "kind": {"enum": ["all", "notes", "knowledge"], "default": "all",
                            "description": "all (default), notes only, or knowledge items only."}},
                  ("query",)), search),
    ToolSpec("neighbors", "What belongs with a note, grouped by signal: links_out, backlinks, relations (typed), "
             "type_defaults, change (edited in one work session), search (found together), suggestions (similar, "
             "not linked). Each entry has {id, path, title, kind, provenance, confidence, weight, evidence}. "
             "An unknown or hidden note is 'not found'.",
             _obj({"note": NOTE_ARG, "signals": {**SIGNALS, "description": "Only these groups (default: all)."},
                   "limit": {**LIMIT, "description": "Entries per group (1-50, default 10)."}}, ("note",)), neighbors),
    ToolSpec("get_note", "One note: {id, path, title, type, tags, aliases, frontmatter, text (the file, frontmatter "
             "included), text_source} and, with chunks=true, its chunks {seq, heading, lines, tokens, text}. "
             "An unknown or hidden note is 'not found'.",
             _obj({"note": NOTE_ARG, "chunks": {"type": "boolean", "default": False,
                                                "description": "Also return the note's chunks."},
                   "max_chars": {"type": "integer", "minimum": 100, "maximum": 200_000, "default": MAX_NOTE_CHARS,
                                 "description": "Cut the text at this many characters (truncated: true)."}},
                  ("note",)), get_note),
    ToolSpec("knowledge_search", "Distilled, sourced statements (facts, decisions, preferences, ...): with a query, "
             "a search (words and meaning) over the current items, optionally of one type; without, the current "
             "items filtered by subject (about), type and status. Returns {items: [{item_id, type, title, body, "
             "quote, about, status, confidence, importance, source_id, source_path, score}]}, best first.",
             _obj({"query": {"type": "string", "minLength": 1, "maxLength": 2000, "description": "What to look for."},
                   "about": {**NOTE_ARG, "description": "Only items about this note (entity) or 'topic:<text>'."},
                   "type": {"enum": list(KNOWLEDGE_TYPES), "description": "Only items of this type."},
                   "status": {"enum": list(KNOWLEDGE_STATUSES), "description": "Only items in this status."},
                   "limit": LIMIT}), knowledge_search),
    ToolSpec("context_pack", "The context to read before working on a note or a question, cut to your token budget: "
             "the best notes (for a query: an automatic search; for a note: that note), each with its typed "
             "neighbours, its confirmed knowledge and its text (best chunk first). Give exactly one of note or "
             "query. Returns {seed, budget_tokens, used_tokens, notes: [{id, path, title, type, score, neighbours: "
             "[{id, title, path, kinds}], knowledge, text, truncated}], omitted, notices}.",
             _obj({"note": NOTE_ARG,
                   "query": {"type": "string", "minLength": 1, "maxLength": 2000, "description": "The question."},
                   "budget_tokens": {"type": "integer", "minimum": 200, "maximum": 100_000, "default": 2000,
                                     "description": "The most tokens the answer may take (estimated)."},
                   "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5,
                             "description": "For a query: how many notes at most."},
                   "signals": {**SIGNALS, "description": "Neighbour groups to include (default: relations, "
                                                         "type_defaults, links_out, backlinks)."}}), context_pack),
    ToolSpec("propose_knowledge", "Propose a knowledge item (knowledge_proposal.v1). It is never written directly: "
             "the one writer decides add (as a draft), supersede, noop (already known) or files a curation card for "
             "the owner (unknown subject, near-duplicate, contradiction, missing quote). Give a quote from the "
             "source. Returns {decision, reason, item_id, card_id, source}.",
             _obj({"type": {"enum": list(KNOWLEDGE_TYPES), "description": "What kind of statement."},
                   "title": {"type": "string", "minLength": 1, "maxLength": 300,
                             "description": "The statement itself, one line."},
                   "body": {"type": "string", "maxLength": 20_000, "description": "Detail (optional)."},
                   "quote": {"type": "string", "maxLength": 4_000,
                             "description": "The words of the source that support it."},
                   "about": {"type": "string", "minLength": 1, "maxLength": 300,
                             "description": "The subject: an entity note's name, or 'topic:<text>'."},
                   "supersedes": {"type": "integer", "minimum": 1, "description": "The item this one replaces."},
                   "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                   "valid_from": {"type": "string", "description": "ISO date from which it holds."}},
                  ("type", "title")), propose_knowledge, writes=True),
)
