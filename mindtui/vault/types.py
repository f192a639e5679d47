"""The type registry (config/types.yaml): chunk profile, retriever weight and edge defaults per type."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from mindtui.config import ConfigError

HARD_TOKEN_LIMIT = 512  # the embedding model's window; no chunk may exceed it


@dataclass(frozen=True)
class ChunkProfile:
    name: str
    max_tokens: int = 380
    min_tokens: int = 48
    split_levels: int = 3  # headings of this level or higher start a new chunk


@dataclass(frozen=True)
class NoteType:
    name: str
    chunk_profile: str = "default"
    retriever_weight: float = 1.0
    edge_defaults: tuple[str, ...] = ()


@dataclass
class TypeRegistry:
    default_type: str
    types: dict[str, NoteType]
    profiles: dict[str, ChunkProfile]
    folders: list[tuple[str, str]] = field(default_factory=list)  # (path prefix, type)
    symmetric_relations: frozenset[str] = frozenset()
    frontmatter_relations: dict[str, str] = field(default_factory=dict)
    fingerprint: str = ""  # changes whenever the file's meaning may have changed

    def type_for(self, declared: object, path: str) -> str:
        if isinstance(declared, str) and declared.strip():
            return declared.strip().lower()
        for prefix, type_name in self.folders:
            if path.startswith(prefix):
                return type_name
        return self.default_type

    def note_type(self, name: str) -> NoteType:
        return self.types.get(name) or self.types[self.default_type]

    def profile(self, name: str) -> ChunkProfile:
        return self.profiles.get(name) or self.profiles["default"]

    def frontmatter_relation(self, key: str) -> str:
        key = key.strip().lower()
        return self.frontmatter_relations.get(key) or relation_name(key)


_RELATION_CHARS = re.compile(r"[^a-z0-9_]+")


def relation_name(text: str) -> str:
    """'Related To' -> 'related_to': relation names are lower-case identifiers."""
    return _RELATION_CHARS.sub("_", text.strip().lower()).strip("_") or "related_to"


def load_type_registry(path: Path) -> TypeRegistry:
    try:
        raw_text = path.read_text(encoding="utf-8")
        data = yaml.safe_load(raw_text) or {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"type registry {path}: cannot read: {exc}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"type registry {path}: invalid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"type registry {path}: expected a mapping at the top level")

    profiles: dict[str, ChunkProfile] = {"default": ChunkProfile("default")}
    for name, spec in (data.get("chunk_profiles") or {}).items():
        spec = spec or {}
        profile = ChunkProfile(
            name=str(name),
            max_tokens=int(spec.get("max_tokens", 380)),
            min_tokens=int(spec.get("min_tokens", 48)),
            split_levels=int(spec.get("split_levels", 3)),
        )
        if not 16 <= profile.max_tokens <= HARD_TOKEN_LIMIT:
            raise ConfigError(
                f"type registry {path}: chunk profile {name!r}: max_tokens must be 16..{HARD_TOKEN_LIMIT}"
            )
        profiles[profile.name] = profile

    types: dict[str, NoteType] = {}
    for name, spec in (data.get("types") or {}).items():
        spec = spec or {}
        profile = str(spec.get("chunk_profile", "default"))
        if profile not in profiles:
            raise ConfigError(f"type registry {path}: type {name!r} names unknown chunk profile {profile!r}")
        types[str(name).lower()] = NoteType(
            name=str(name).lower(),
            chunk_profile=profile,
            retriever_weight=float(spec.get("retriever_weight", 1.0)),
            edge_defaults=tuple(relation_name(r) for r in (spec.get("edge_defaults") or [])),
        )
    default_type = str(data.get("default_type", "note")).lower()
    types.setdefault(default_type, NoteType(default_type))

    folders = [(str(f["prefix"]), str(f["type"]).lower()) for f in (data.get("folders") or [])]
    return TypeRegistry(
        default_type=default_type,
        types=types,
        profiles=profiles,
        folders=folders,
        symmetric_relations=frozenset(relation_name(r) for r in (data.get("symmetric_relations") or [])),
        frontmatter_relations={
            str(k).lower(): relation_name(str(v)) for k, v in (data.get("frontmatter_relations") or {}).items()
        },
        fingerprint=hashlib.sha256(raw_text.encode("utf-8")).hexdigest()[:16],
    )
