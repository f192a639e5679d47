"""A context pack: what an agent (or any front end) should read about a note or a query, cut to a
token budget the caller gives.

From a note: that note; from a query: the best notes of an automatic search (no rerank, not
logged as the owner's search, full text while the model loads). For each note: its confirmed
knowledge items, its typed neighbours and its text, best chunk first. Everything is read through
the service, so the audience rule holds: an agent's pack never holds a private or
`ai_processing: none` note, item or neighbour.

The budget counts the pack as the caller receives it (compact JSON) with the token estimate of
`mindtui.text`. The count is kept up to date as the pack grows (_Count): every step adds the tokens
of what it adds, so building a pack is linear in its size (serialising the whole pack after each
step, as it once did, was quadratic). First every note's header (a map of what there is), then note by note in rank
order within a share of what is left (1, 1/2, 1/3, ... by rank): knowledge, neighbours (up to
half the share), whole chunks of text (a note with no text yet gets its best chunk cut at a word);
then what is left goes to more text and more neighbours, best note first. What did not fit is
counted in `omitted`; a note whose text was cut says `truncated`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mindtui.errors import InputError
from mindtui.search.engine import SearchOptions
from mindtui.text.tokens import content_tokens, estimate_tokens

if TYPE_CHECKING:
    from mindtui.service.core import Service

TYPED_SIGNALS = ("relations", "type_defaults", "links_out", "backlinks")
MIN_BUDGET, MAX_BUDGET = 200, 100_000  # the pack's frame and notices take ~100-150 tokens
MIN_TEXT_TOKENS = 24  # a text cut shorter than this says nothing: leave it out instead
ELLIPSIS = " …"


def dumps(data) -> str:
    """The compact JSON the budget is counted on (and what the MCP server sends)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)


def tokens_of(data) -> int:
    return estimate_tokens(dumps(data))


@dataclass
class _Seed:
    note: str  # a note_id
    score: float | None
    best_chunk: int | None


def build_context_pack(service: "Service", *, note: str | None = None, query: str | None = None,
                       budget_tokens: int = 2000, limit: int = 5, signals: tuple[str, ...] = TYPED_SIGNALS,
                       neighbours_per_note: int = 8, knowledge: bool = True) -> dict:
    if (note is None) == (query is None) or not (note or query or "").strip():
        raise InputError("context_pack needs exactly one of `note` or `query` (non-empty)")
    for name, value in (("budget_tokens", budget_tokens), ("limit", limit)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputError(f"{name} must be a whole number, not {value!r}")
    if not MIN_BUDGET <= budget_tokens <= MAX_BUDGET:
        raise InputError(f"budget_tokens must be between {MIN_BUDGET} and {MAX_BUDGET}, not {budget_tokens}")
    if not 1 <= limit <= 50:
        raise InputError(f"limit must be between 1 and 50, not {limit}")
    notices: list[str] = []
    if note is not None:
        view = service._note(note, with_chunks=False)  # NoteNotFound for a note the audience may not see
        seeds = [_Seed(view.note_id, None, None)]
    else:
        # notes only: a knowledge item is no seed (one about a topic has no note; one from a note would
        # repeat it), the items come with their notes below
        response = service._search(query, SearchOptions(limit=limit, log=False, rerank=False, wait_for_model=False,
                                                        kind="notes"))
        notices.extend(response.notices)
        seeds = [_Seed(r.note_id, round(r.score, 4), r.chunk_id) for r in response.results]
    pack: dict = {"seed": {"note": note} if note is not None else {"query": query}, "budget_tokens": budget_tokens,
                  # as many digits as the final figure can have, so that filling counts it right
                  "used_tokens": budget_tokens, "notes": [],
                  "omitted": {"notes": 0, "neighbours": 0, "knowledge": 0, "text": 0}, "notices": notices}
    loaded = [_load(service, seed, signals, neighbours_per_note, knowledge) for seed in seeds]
    count = _Count(pack)

    # 1. every note's header: the map of what there is, best first
    for entry, *_rest in loaded:
        if not count.append(pack["notes"], entry, budget_tokens):
            count.set_number(pack["omitted"], "notes", pack["omitted"]["notes"] + 1)
    kept = [item for item in loaded if any(item[0] is entry for entry in pack["notes"])]
    count.set_number(pack["omitted"], "text", pack["omitted"]["text"]
                     + sum(1 for item in loaded if item not in kept and item[3]))
    # 2. per note in rank order, within its share of what is left (by rank: 1, 1/2, 1/3, ... of the
    # notes still to come; a share a note does not use goes to the notes after it): confirmed
    # knowledge, neighbours up to half the share, text
    for number, (entry, neighbours, items, chunks) in enumerate(kept):
        now = count.total
        weights = [1 / (rank + 1) for rank in range(number, len(kept))]
        limit = now + int((budget_tokens - now) * weights[0] / sum(weights))
        _add(count, entry["knowledge"], items, limit)
        _add(count, entry["neighbours"], neighbours, count.total + (limit - count.total) // 2)
        # whole chunks within the share; a note with no text yet gets a cut of its best chunk
        _fill_text(count, entry, chunks, limit, cut=not entry["text"])
    # 3. what is left, best note first: more text, then the other neighbours
    for entry, _neighbours, _items, chunks in kept:
        _fill_text(count, entry, chunks, budget_tokens, cut=True)
    for entry, neighbours, _items, _chunks in kept:
        _add(count, entry["neighbours"], neighbours, budget_tokens)
    for entry, neighbours, items, chunks in kept:
        pack["omitted"]["neighbours"] += len(neighbours)
        pack["omitted"]["knowledge"] += len(items)
        if entry.pop("_next") != len(chunks):
            entry["truncated"] = True
            pack["omitted"]["text"] += 0 if entry["text"] else 1
    for entry in pack["notes"]:
        for key in ("neighbours", "knowledge", "text"):
            if not entry[key]:
                del entry[key]
    for _ in range(3):  # the figure's own digits count too: settle on a fixed point (fewer digits: never more)
        used = tokens_of(pack)
        if used == pack["used_tokens"]:
            break
        pack["used_tokens"] = used
    return pack


def _load(service: "Service", seed: _Seed, signals: tuple[str, ...], per_note: int, with_knowledge: bool):
    view = service._note(seed.note, with_chunks=True)
    entry: dict = {"id": view.note_id, "path": view.path, "title": view.title, "type": view.type}
    if seed.score is not None:
        entry["score"] = seed.score
    entry.update(neighbours=[], knowledge=[], text="", _next=0)  # _next: the next chunk to add (removed at the end)
    found = service.neighbours(view.note_id, tuple(signals))
    by_note: dict[str, dict] = {}  # one entry per neighbour note, every kind that links them
    for group in signals:
        for n in found.groups.get(group, []):
            if n.note_id is None:
                continue
            entry_of = by_note.setdefault(n.note_id, {"id": n.note_id, "title": n.title, "path": n.path, "kinds": []})
            if n.kind not in entry_of["kinds"]:
                entry_of["kinds"].append(n.kind)
    neighbours = list(by_note.values())[:per_note]
    items = []
    if with_knowledge:
        for item in service.knowledge_for_note(view.note_id):
            if item.status == "confirmed" and item.is_current:
                items.append({k: v for k, v in (("item_id", item.item_id), ("type", item.type), ("title", item.title),
                                                ("body", item.body), ("about", item.about)) if v})
    chunks = sorted(view.chunks, key=lambda c: (c.chunk_id != seed.best_chunk, c.seq))
    return entry, neighbours, items, [c.text for c in chunks]


def _inserted(before: str, text: str, after: str) -> int:
    """The tokens `text` adds between the characters `before` and `after`. The estimate is
    additive across a character that is a piece of its own, except that a symbol after a space
    starts a word (mindtui.text.tokens): one character of context on each side settles it."""
    return content_tokens(before + text + after) - content_tokens(before + after)


class _Count:
    """The pack's token count, kept as the pack grows: each change counts only what it adds.

    A value appended to a list goes between "[" or the last value (never a space in compact
    JSON) and "]", with a comma before it if the list had one; text appended inside a string goes
    between the string's last character (escaped) and its closing quote.
    """

    def __init__(self, pack: dict) -> None:
        self.total = tokens_of(pack)

    def append(self, target: list, value, limit: int) -> bool:
        """Append `value` to `target` if the pack stays within `limit`; whether it did."""
        cost = _inserted("[", ("," if target else "") + dumps(value), "]")
        if self.total + cost > limit:
            return False
        target.append(value)
        self.total += cost
        return True

    @staticmethod
    def text_cost(entry: dict, piece: str) -> int:
        """What appending `piece` to the entry's text (after a blank line) adds."""
        text = entry["text"]
        added = f"\n\n{piece}" if text else piece
        before = dumps(text[-1:])[1:-1][-1:] or '"'  # the escaped last character, or the opening quote
        return _inserted(before, dumps(added)[1:-1], '"')

    def extend_text(self, entry: dict, piece: str, limit: int) -> bool:
        """Append `piece` to the entry's text (after a blank line) if the pack stays within `limit`."""
        cost = self.text_cost(entry, piece)
        if self.total + cost > limit:
            return False
        entry["text"] += f"\n\n{piece}" if entry["text"] else piece
        self.total += cost
        return True

    def set_number(self, holder: dict, key: str, value: int) -> None:
        self.total += _inserted(":", str(value), ",") - _inserted(":", str(holder[key]), ",")
        holder[key] = value


def _add(count: _Count, target: list, values: list, limit: int) -> None:
    """Move values (in order) into `target` while the pack stays within `limit` tokens."""
    taken = 0
    while taken < len(values) and count.append(target, values[taken], limit):
        taken += 1
    del values[:taken]


def _fill_text(count: _Count, entry: dict, chunks: list[str], limit: int, cut: bool) -> None:
    """Append the note's next chunks (best first) while the pack stays within `limit` tokens. With
    `cut`, the chunk that does not fit whole is cut at a word (if enough room is left) and the
    note's text ends there."""
    while entry["_next"] < len(chunks):
        text = chunks[entry["_next"]]
        if count.extend_text(entry, text, limit):
            count.set_number(entry, "_next", entry["_next"] + 1)
            continue
        if cut and limit - count.total >= MIN_TEXT_TOKENS and _cut(count, entry, text, limit):
            count.set_number(entry, "_next", len(chunks) + 1)  # cut: nothing more of this note
        return


def _cut(count: _Count, entry: dict, text: str, limit: int) -> bool:
    """Append the longest word-boundary prefix of `text` that still fits (binary search on words);
    whether any did."""
    words = text.split(" ")
    low, high, best = 1, len(words), 0
    while low <= high:
        middle = (low + high) // 2
        if count.total + count.text_cost(entry, " ".join(words[:middle]) + ELLIPSIS) <= limit:
            best, low = middle, middle + 1
        else:
            high = middle - 1
    return best > 0 and count.extend_text(entry, " ".join(words[:best]) + ELLIPSIS, limit)
