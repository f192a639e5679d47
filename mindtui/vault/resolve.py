"""Link resolution as Obsidian does it: vault path, path from the linking note's folder, then
path suffix or unique file name (case-insensitive), for wikilinks and markdown links alike.
Names compare in one Unicode normalisation (NFC), as macOS compares file names: a vault synced
from a Mac holds `Übung.md` decomposed (NFD), while a link typed elsewhere is composed.

Aliases do not resolve links (Obsidian only offers them while typing a link): a link that names
an alias stays missing, its detail says whose alias it is, and curation offers to write it as
`[[Target|alias]]` (mindtui.curation.alias_links). Ambiguous or missing targets are never
guessed: they come back unresolved with the reason.
Links to markdown files that exist but are not indexed (excluded, too large) are
`out_of_corpus`, not missing.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from dataclasses import dataclass, field, replace

from mindtui.store.visibility import LINK_NOTES_MAX
from mindtui.text.names import composed
from mindtui.vault.links import is_attachment


@dataclass(frozen=True)
class Resolution:
    status: str  # resolved | self | attachment | missing | ambiguous | out_of_corpus
    note_id: str | None = None
    detail: str = ""
    candidates: tuple[str, ...] = ()  # ambiguous: the notes the deciding rule found, sorted
    fallback: tuple[tuple[str, ...], ...] = ()  # resolved or ambiguous: the later rules' notes (_later_rules)


def fold(text: str) -> str:
    """A name as every rule compares it: composed (NFC), lower case."""
    return composed(text).lower()


def stem_key(path: str) -> str:
    """'Folder/Note.md' -> 'folder/note': the case-insensitive key Obsidian matches on."""
    path = path.strip().replace("\\", "/").lstrip("/")
    if path.lower().endswith(".md"):
        path = path[:-3]
    return fold(path)


@dataclass
class NameIndex:
    """All names a link can use, built from indexed notes plus the vault's other files."""

    by_path: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    by_name: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    by_alias: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))  # for messages only
    by_suffix: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))  # 'sub/note'
    paths: dict[str, str] = field(default_factory=dict)  # note_id -> path (for messages)
    outside: dict[str, tuple[str, str]] = field(default_factory=dict)  # key -> (path, reason)
    outside_names: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    attachments: set[str] = field(default_factory=set)  # lower-case paths and file names

    def add_note(self, note_id: str, path: str, aliases: list[str]) -> None:
        key = stem_key(path)
        self.by_path[key].append(note_id)
        self.by_name[key.rpartition("/")[2]].append(note_id)
        parts = key.split("/")
        for i in range(1, len(parts) - 1):
            self.by_suffix["/".join(parts[i:])].append(note_id)
        for alias in {fold(a.strip()) for a in aliases if a and a.strip()}:
            self.by_alias[alias].append(note_id)
        self.paths[note_id] = path

    def add_outside(self, path: str, reason: str) -> None:
        key = stem_key(path)
        self.outside[key] = (path, reason)
        self.outside_names[key.rpartition("/")[2]].append(key)

    def add_attachment(self, path: str) -> None:
        lower = fold(path)
        self.attachments.add(lower)
        self.attachments.add(lower.rpartition("/")[2])

    def _pick(self, candidates: list[str], how: str) -> Resolution | None:
        unique = sorted(set(candidates))
        if len(unique) == 1:
            return Resolution("resolved", unique[0], how)
        if len(unique) > 1:
            names = ", ".join(sorted(self.paths.get(c, c) for c in unique)[:5])
            return Resolution("ambiguous", None, f"{len(unique)} notes match by {how}: {names}")
        return None

    def resolve(self, target_path: str, source_note_id: str, source_path: str) -> Resolution:
        if not target_path.strip():
            return Resolution("self", source_note_id)
        if is_attachment(target_path):
            lower = fold(target_path.strip()).lstrip("/")
            if lower in self.attachments or lower.rpartition("/")[2] in self.attachments:
                return Resolution("attachment", None, target_path)
            return Resolution("missing", None, f"attachment {target_path!r} not found in the vault")
        key = stem_key(target_path)
        tiers = self._tiers(key, source_path)  # walked once: the deciding rule, its candidates, the later ones
        how, found_ids = _deciding(tiers)
        found = self._pick(found_ids, how)
        if found is not None:
            if found.note_id == source_note_id:
                return Resolution("self", source_note_id)
            candidates = tuple(sorted(set(found_ids))) if found.status == "ambiguous" else ()
            return replace(found, candidates=candidates, fallback=_later_rules(tiers))
        outside = self._outside(key, source_path)
        if outside is not None:
            return outside
        owners = sorted({self.paths[n] for n in self.by_alias.get(key, ())})
        if owners:
            return Resolution("missing", None, f"no note named {target_path!r}; it is an alias of "
                                               f"{', '.join(owners[:5])} (aliases do not resolve links)")
        return Resolution("missing", None, f"no note named {target_path!r}")

    def matches(self, target_path: str, source_path: str) -> tuple[str, list[str]]:
        """(how, note ids) of the first rule that matches the target (path, relative path, path
        suffix or file name): one id resolves the link, several make it ambiguous."""
        how, found = self._matches(stem_key(target_path), source_path)
        return how, sorted(set(found))

    def alias_owners(self, target_path: str) -> list[str]:
        """The notes whose `aliases` name the target (which does not make it resolve)."""
        return sorted(set(self.by_alias.get(stem_key(target_path), ())))

    def _tiers(self, key: str, source_path: str) -> list[tuple[str, list[str]]]:
        """(how, note ids) of every rule in the order Obsidian tries them: the first with a note decides."""
        tiers = [("path", self.by_path.get(key, []))]
        relative = _relative(key, source_path)
        if relative is not None:
            tiers.append(("relative path", self.by_path.get(relative, [])))
        if "/" in key:
            tiers.append(("path suffix", self.by_suffix.get(key, [])))
        else:
            tiers.append(("file name", self.by_name.get(key, [])))
        return tiers

    def _matches(self, key: str, source_path: str) -> tuple[str, list[str]]:
        return _deciding(self._tiers(key, source_path))

    def _outside(self, key: str, source_path: str) -> Resolution | None:
        hit = self.outside.get(key)
        relative = _relative(key, source_path) if hit is None else None
        if relative is not None:
            hit = self.outside.get(relative)
        if hit is None and "/" not in key and len(self.outside_names.get(key, [])) == 1:
            hit = self.outside[self.outside_names[key][0]]
        if hit is None:
            return None
        path, reason = hit
        return Resolution("out_of_corpus", None, f"{path}: {reason}")


def _deciding(tiers: list[tuple[str, list[str]]]) -> tuple[str, list[str]]:
    """The first rule with a note (else the last rule, with none)."""
    return next(((how, found) for how, found in tiers if found), tiers[-1])


def _later_rules(tiers: list[tuple[str, list[str]]]) -> tuple[tuple[str, ...], ...]:
    """What the link would mean without the notes the rule that decides found: the notes of each
    later rule that matches the target, in rule order, each sorted, less those an earlier rule
    found (the link reaches a later rule only when those are gone); rules left with none are left
    out. A rule with more than LINK_NOTES_MAX notes is `()`, and the last: ambiguous to anyone
    who may see two of them (a vault's every folder with its own `index.md` would store each
    `[[index]]` link with every other one's id). To an agent that may see none of the deciding
    notes, the link is the first of these with a note it may see, or an empty one
    (store.visibility)."""
    seen: set[str] = set()
    found_tiers: list[tuple[str, ...]] = []
    for _, found in tiers:
        if found_tiers and len(found) > LINK_NOTES_MAX + len(seen):
            found_tiers.append(())  # more than LINK_NOTES_MAX notes besides those seen: many
            break
        fresh = tuple(sorted(set(found) - seen))
        if fresh:
            found_tiers.append(fresh)
            seen.update(fresh)
    return tuple(found_tiers[1:])


def _relative(key: str, source_path: str) -> str | None:
    """The key read from the linking note's folder, when that differs from the key itself."""
    folder = source_path.rpartition("/")[0]
    if not folder and not key.startswith("."):
        return None
    return posixpath.normpath(posixpath.join(fold(folder), key))
