"""Which new file is a vanished note under another name: same frontmatter id, same content,
or (an edit during the move) enough shared text.

A match keeps the note's id, so what only the database holds (search pairs, knowledge,
curation answers) survives the rename. Matching is one-to-one and deterministic: exact
evidence first, then the most similar pairs, ties broken by path.
"""

from __future__ import annotations

from typing import Callable, Mapping, Protocol

from mindtui.text import analysis

SHINGLE_WORDS = 3
# Comparing every new file with every vanished note costs their product; above this, only
# exact matches (id, content) are made and the import says so.
MAX_FUZZY_PAIRS = 250_000


class Candidate(Protocol):
    note_id: str
    path: str
    content_hash: str
    declared_id: str | None


def shingles(text: str) -> frozenset[int]:
    """Hashed runs of SHINGLE_WORDS words: what two versions of a text share."""
    words = analysis.words(text)
    if len(words) < SHINGLE_WORDS:
        return frozenset({hash(" ".join(words))}) if words else frozenset()
    return frozenset(hash(" ".join(words[i:i + SHINGLE_WORDS])) for i in range(len(words) - SHINGLE_WORDS + 1))


def overlap(first: frozenset[int], second: frozenset[int]) -> float:
    """Jaccard similarity of two shingle sets."""
    if not first or not second:
        return 0.0
    return len(first & second) / len(first | second)


def match_renames(added: Mapping[str, tuple[str, str | None]], vanished: list[Candidate],
                  old_texts: Mapping[str, str], min_overlap: float,
                  text_of: Callable[[str], str]) -> tuple[dict[str, Candidate], list[str]]:
    """added: new path -> (content hash, declared id); text_of(new path): its body text, asked
    only of the files compared by text (one at a time: the importer holds no parsed file).
    Returns (new path -> vanished note it continues, notices)."""
    notices: list[str] = []
    matches: dict[str, Candidate] = {}
    free = sorted(vanished, key=lambda v: v.path)

    def take(path: str, candidate: Candidate) -> None:
        matches[path] = candidate
        free.remove(candidate)

    for path in sorted(added):  # 1. the same frontmatter id
        declared = added[path][1]
        found = next((v for v in free if declared and v.declared_id == declared), None)
        if found is not None:
            take(path, found)
    for path in sorted(p for p in added if p not in matches):  # 2. the same bytes
        found = next((v for v in free if v.content_hash == added[path][0]), None)
        if found is not None:
            take(path, found)
    rest = sorted(p for p in added if p not in matches)
    if not rest or not free:
        return matches, notices
    if len(rest) * len(free) > MAX_FUZZY_PAIRS:
        notices.append(f"{len(rest)} new and {len(free)} vanished notes: too many to compare texts; only renames "
                       "with unchanged content or the same frontmatter id were recognised")
        return matches, notices
    old_sets = {v.note_id: shingles(old_texts.get(v.note_id, "")) for v in free}
    scored = []  # only the pairs that may match: a new file's shingles are dropped once it is scored
    for path in rest:
        new_set = shingles(text_of(path))
        scored += [(score, path, v.path, v) for v in free
                   if (score := overlap(new_set, old_sets[v.note_id])) >= min_overlap]
    scored.sort(key=lambda item: (-item[0], item[1], item[2]))
    for score, path, _, candidate in scored:  # 3. most shared text first
        if path not in matches and candidate in free:
            take(path, candidate)
    return matches, notices
