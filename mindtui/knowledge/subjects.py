"""What an item is about, when two statements are the same, and how close two statements are.

`about` names an entity note (a note whose type is one of `knowledge.entity_types`) by note id,
vault path, title, alias or file name, or a free topic as "topic:<text>". A name that resolves
to no entity never creates one: the writer files an `unresolved_entity` card instead.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass

import apsw
import numpy as np

from mindtui.knowledge.proposal import Proposal, topic_of
from mindtui.store import knowledge_store as store
from mindtui.store import names
from mindtui.text import analysis
from mindtui.text.names import exact_key


@dataclass(frozen=True)
class Subject:
    note_id: str | None = None  # an entity note
    topic: str | None = None  # a free topic, as written
    unresolved: str | None = None  # a name that resolved to no (single) entity
    candidates: tuple[dict, ...] = ()  # for an unresolved name: the notes it does name (not entities, or several)

    @property
    def key(self) -> str:
        """What statement identity uses for the subject."""
        if self.note_id is not None:
            return f"note:{self.note_id}"
        if self.topic is not None:
            return f"topic:{exact_key(self.topic)}"
        if self.unresolved is not None:
            return f"name:{exact_key(self.unresolved)}"
        return ""

    @property
    def topic_key(self) -> str | None:
        return None if self.topic is None else exact_key(self.topic)


def matching_notes(conn: apsw.Connection, name: str) -> list[names.NamedNote]:
    """Notes the name names: by note id, else vault path, title, alias, file name (the first way that matches)."""
    return names.notes_named(conn, name)[1]


def resolve_about(conn: apsw.Connection, about: str | None, entity_types: tuple[str, ...],
                  any_note: bool = False, for_agents_too: bool = False) -> Subject:
    """The subject of `about`. any_note: the owner chose the note (a card's answer): its type does not matter.
    for_agents_too: the proposal comes from a note agents may see, so its item must be what it
    would be without the notes hidden from them: among several entities, the only one they may
    see is the subject (a private `Privat/Emre.md` beside `Personen/Emre.md` makes no card)."""
    if about is None:
        return Subject()
    topic = topic_of(about)
    if topic is not None:
        return Subject(topic=topic)
    found = matching_notes(conn, about)
    wanted = {t.lower() for t in entity_types}
    entities = found if any_note else [r for r in found if r.type.lower() in wanted]
    if len(entities) > 1 and for_agents_too:
        seen = [r for r in entities if store.note_open_to_agents(conn, r.note_id)]
        entities = seen if len(seen) == 1 else entities
    if len(entities) == 1:
        return Subject(note_id=entities[0].note_id)
    return Subject(unresolved=about, candidates=tuple(
        {"note_id": r.note_id, "path": r.path, "title": r.title, "type": r.type} for r in found[:8]))


def normalised(text: str) -> str:
    return " ".join(text.casefold().split()).rstrip(" .!;:")


def statement_hash(proposal: Proposal, subject: Subject) -> str:
    """Exact-duplicate identity: type, normalised title and body, and the subject."""
    return store.sha256_text(json.dumps([proposal.type, normalised(proposal.title), normalised(proposal.body),
                                         subject.key], ensure_ascii=False))


def word_cosine(first: str, second: str) -> float:
    """Cosine of the two texts' stem counts (each in its own language): the comparison without a model."""
    a = Counter(analysis.analyze(first, analysis.detect_language(first)).split())
    b = Counter(analysis.analyze(second, analysis.detect_language(second)).split())
    if not a or not b:
        return 0.0
    dot = sum(count * b[word] for word, count in a.items())
    return dot / (math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values())))


def vector_cosine(first: np.ndarray, second: np.ndarray) -> float:
    a = np.asarray(first, dtype=np.float32)
    b = np.asarray(second, dtype=np.float32)
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b) / norm if norm > 0 else 0.0
