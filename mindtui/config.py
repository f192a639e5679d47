"""Settings: bundled defaults, then the user's file, then MINDTUI_* environment variables.

The bundled `config/mindtui.yaml` is the one place where defaults are written. This module
holds the schema: one frozen dataclass per section, each field with its type and, where it
has one, its range or its choices (no default values here). Every layer (user file,
environment, `--set` overrides) is checked against the schema before it is merged, so an
unknown key, a wrong type or an out-of-range value is a ConfigError naming the key and where
it came from. Code reads typed values (`settings.search.candidate_pool`), never a fallback.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import os
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from mindtui import locations
from mindtui.errors import ConfigError

ENV_PREFIX = "MINDTUI_"
CONFIG_FILE_ENV = "MINDTUI_CONFIG_FILE"
# Environment variables that name a top-level key directly (MINDTUI_DB -> db).
_TOP_LEVEL_ENV = {"DB": "db", "VAULT": "vault", "DATA_DIR": "data_dir", "TYPES_FILE": "types_file"}

__all__ = ["ConfigError", "Settings", "load_settings", "parse_overrides"]


def setting(*, low: float | None = None, high: float | None = None, choices: tuple | None = None,
            above: float | None = None) -> Any:
    """A schema field: its type comes from the annotation, its default from the bundled YAML."""
    return field(metadata={"low": low, "high": high, "above": above, "choices": choices})


@dataclass(frozen=True)
class ImportSettings:
    exclude: tuple[str, ...] = setting()
    max_file_bytes: int = setting(low=1)
    follow_external_symlinks: bool = setting()
    max_delete_fraction: float = setting(low=0.0, high=1.0)
    mass_delete_min: int = setting(low=1)
    rename_min_overlap: float = setting(above=0.0, high=1.0)


@dataclass(frozen=True)
class DatabaseSettings:
    busy_timeout_ms: int = setting(low=0)
    read_only: bool = setting()


@dataclass(frozen=True)
class ModelSettings:
    dir: str | None = setting()
    embedding_path: str | None = setting()
    threads: int = setting(low=0)
    reranker_path: str | None = setting()
    reranker_threads: int = setting(low=0)
    embed_batch: int = setting(low=1, high=512)
    retry_after_s: float = setting(low=0.0)


@dataclass(frozen=True)
class RrfWeights:
    """Each list's weight in the reciprocal-rank sum."""

    fts: float = setting(low=0.0)
    vector: float = setting(low=0.0)
    title: float = setting(low=0.0)


@dataclass(frozen=True)
class SearchSettings:
    candidate_pool: int = setting(low=1, high=10_000)
    min_cosine: float = setting(low=-1.0, high=1.0)
    ann_min_vectors: int = setting(low=1)
    ann_rescore: int = setting(low=1, high=100_000)
    ann_prefilter: int = setting(low=0, high=1_000_000)
    ann_note_rescore: int = setting(low=1, high=100_000)
    ann_note_prefilter: int = setting(low=0, high=1_000_000)
    ann_recall_sample: int = setting(low=0, high=10_000)
    ann_recall_floor: float = setting(low=0.0, high=1.0)
    fusion: str = setting(choices=("convex", "rrf"))
    convex_normalisation: str = setting(choices=("zscore", "minmax", "zscore-pool"))
    rrf_k: float = setting(above=0.0)
    rrf_weights: RrfWeights = setting()
    convex_alpha: float = setting(low=0.0, high=1.0)
    anchor_text: bool = setting()
    graph_expansion: bool = setting()
    graph_expansion_top: int = setting(low=0)
    graph_expansion_factor: float = setting(low=0.0)
    rerank_top: int = setting(low=0)
    log_top: int = setting(low=0)
    memory: bool = setting()
    memory_weight: float = setting(low=0.0)
    memory_half_life_days: float = setting(above=0.0)
    memory_min_shared_words: float = setting(above=0.0, high=1.0)
    memory_overlap_top: int = setting(low=1, high=100)
    memory_vector_share: float = setting(low=0.0)
    memory_rank_penalty: float = setting(low=0.0)
    memory_min_evidence: float = setting()
    memory_evidence_span: float = setting(above=0.0)
    fit_min_opens: int = setting(low=1)
    fit_margin: float = setting(low=0.0)


@dataclass(frozen=True)
class GraphSettings:
    work_logs: tuple[str, ...] = setting()
    session_columns: tuple[str, ...] = setting()
    date_columns: tuple[str, ...] = setting()
    notes_columns: tuple[str, ...] = setting()
    max_notes_per_session: int = setting(low=2)
    search_confirmed_weight: int = setting(low=1)
    suggestions: int = setting(low=0)
    suggest_with: str = setting(choices=("links>vector", "vector+links", "links", "vector"))
    suggest_min_cosine: float = setting(low=-1.0, high=1.0)


@dataclass(frozen=True)
class PrivacySettings:
    private_paths: tuple[str, ...] = setting()
    log_agent_queries: bool = setting()
    agent_uses_history: bool = setting()
    usage_retention_days: int = setting(low=0)


@dataclass(frozen=True)
class RetentionSettings:
    search_log_days: int = setting(low=0)
    job_runs_days: int = setting(low=0)
    watch_runs: int = setting(low=0)


@dataclass(frozen=True)
class JobSettings:
    embed_budget_s: float = setting(low=0.0)
    import_budget_s: float = setting(low=0.0)
    child_nice: int = setting(low=0, high=19)
    wait_for_watch_s: float = setting(low=0.0)


@dataclass(frozen=True)
class CurationSettings:
    note_template: str | None = setting()
    new_note_folder: str = setting()
    related_heading: str = setting()
    suggestion_min_cosine: float = setting(low=-1.0, high=1.0)
    max_new_suggestions: int = setting(low=0)
    snooze_days: int = setting(low=1)


@dataclass(frozen=True)
class KnowledgeSettings:
    entity_types: tuple[str, ...] = setting()
    near_duplicate_cosine: float = setting(low=-1.0, high=1.0)
    quote_required_for: tuple[str, ...] = setting()
    importance_half_life_days: float = setting(above=0.0)
    importance_boost: float = setting(low=0.0, high=1.0)
    max_gap_questions: int = setting(low=0)


@dataclass(frozen=True)
class WatchSettings:
    quiet_s: float = setting(above=0.0, high=60.0)
    max_wait_s: float = setting(above=0.0)
    polling: str = setting(choices=("auto", "always", "never"))
    poll_interval_ms: int = setting(low=50)
    embed: bool = setting()
    embed_budget_s: float = setting(above=0.0)
    import_budget_s: float = setting(above=0.0)
    retry_s: float = setting(above=0.0)


@dataclass(frozen=True)
class Schema:
    """The whole file: top-level keys and one section per subsystem."""

    vault: str | None = setting()
    db: str | None = setting()
    data_dir: str | None = setting()
    types_file: str | None = setting()
    import_: ImportSettings = setting()
    database: DatabaseSettings = setting()
    models: ModelSettings = setting()
    search: SearchSettings = setting()
    graph: GraphSettings = setting()
    privacy: PrivacySettings = setting()
    retention: RetentionSettings = setting()
    jobs: JobSettings = setting()
    curation: CurationSettings = setting()
    knowledge: KnowledgeSettings = setting()
    watch: WatchSettings = setting()


def _key(name: str) -> str:
    """Python field name -> YAML key (`import_` is `import`)."""
    return name.rstrip("_")


@functools.cache
def _fields(cls) -> dict[str, tuple[str, Any, dict]]:
    hints = typing.get_type_hints(cls)
    return {_key(f.name): (f.name, hints[f.name], dict(f.metadata)) for f in dataclasses.fields(cls)}


def _describe(kind) -> str:
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(kind) if a is not type(None)]
        return f"{_describe(inner[0])} or null"
    if origin is tuple:
        return "a list of strings"
    return {bool: "true or false", int: "a whole number", float: "a number", str: "a string"}.get(kind, str(kind))


def _coerce(kind, value, dotted: str, meta: dict):
    """The value as `kind`, or ConfigError saying what was expected."""
    def bad(expected: str | None = None) -> ConfigError:
        return ConfigError(f"{dotted} is {value!r}; expected {expected or _describe(kind)}")

    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        if value is None:
            return None
        inner = next(a for a in typing.get_args(kind) if a is not type(None))
        return _coerce(inner, value, dotted, meta)
    if origin is tuple:
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
            raise bad()
        return tuple(items)
    if kind is bool:
        if not isinstance(value, bool):
            raise bad()
        return value
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad()
    elif kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise bad("a finite number" if isinstance(value, float) else None)
        value = float(value)
    elif kind is str:
        if not isinstance(value, str):
            raise bad()
    if meta.get("choices") and value not in meta["choices"]:
        raise bad("one of " + ", ".join(meta["choices"]))
    low, high, above = meta.get("low"), meta.get("high"), meta.get("above")
    if (low is not None and value < low) or (high is not None and value > high) or (
            above is not None and value <= above):
        parts = ([f">= {low}"] if low is not None else []) + ([f"> {above}"] if above is not None else []) + (
            [f"<= {high}"] if high is not None else [])
        raise bad(f"a value {' and '.join(parts)}")
    return value


def _check(cls, data: Mapping, prefix: str, complete: bool):
    """Check a (partial) layer against the schema; with complete=True build the dataclass."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{prefix.rstrip('.') or 'the configuration'} must be a mapping, not {data!r}")
    fields = _fields(cls)
    unknown = sorted(str(k) for k in data if k not in fields)
    if unknown:
        known = ", ".join(prefix + k for k in fields)
        raise ConfigError(f"unknown setting {prefix}{unknown[0]} (known here: {known})")
    values = {}
    for key, (name, kind, meta) in fields.items():
        dotted = prefix + key
        if key not in data:
            if complete:
                raise ConfigError(f"setting {dotted} is missing from the bundled defaults")
            continue
        if dataclasses.is_dataclass(kind):
            values[name] = _check(kind, data[key], dotted + ".", complete)
        else:
            values[name] = _coerce(kind, data[key], dotted, meta)
    return cls(**values) if complete else None


def _merge(base: dict, override: Mapping) -> dict:
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = copy.deepcopy(value)
    return base


def _read_yaml(path: Path) -> dict:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {exc}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    return data


def _yaml_scalar(raw: str):
    try:
        return yaml.safe_load(raw) if raw.strip() else raw
    except yaml.YAMLError:
        return raw


def _env_layers(env: Mapping[str, str]) -> list[tuple[str, dict]]:
    """One (variable name, partial settings) per MINDTUI_* variable; an unknown name is an error."""
    layers = []
    for name in sorted(env):
        if not name.startswith(ENV_PREFIX) or name == CONFIG_FILE_ENV:
            continue
        rest, raw = name[len(ENV_PREFIX):], env[name]
        if rest in _TOP_LEVEL_ENV:
            layers.append((name, {_TOP_LEVEL_ENV[rest]: raw}))
            continue
        if "__" not in rest:
            raise ConfigError(f"{name}: not a mindtui setting (use MINDTUI_DB, MINDTUI_VAULT, MINDTUI_DATA_DIR, "
                              f"MINDTUI_TYPES_FILE, {CONFIG_FILE_ENV} or MINDTUI_<SECTION>__<KEY>)")
        keys = [part.lower() for part in rest.split("__")]
        layer: dict = {}
        node = layer
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        # A string setting (a path, a name) takes the text as it is: YAML would read `~` as null.
        node[keys[-1]] = raw if _is_text_setting(keys) else _yaml_scalar(raw)
        layers.append((name, layer))
    return layers


def _is_text_setting(keys: list[str]) -> bool:
    cls = Schema
    for key in keys:
        found = _fields(cls).get(key) if dataclasses.is_dataclass(cls) else None
        if found is None:
            return False
        cls = found[1]
    return cls is str or cls == (str | None)


def parse_overrides(pairs: list[str]) -> dict:
    """["search.rrf_k=30"] -> {"search": {"rrf_k": 30}} (values read as YAML scalars)."""
    result: dict = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set {pair!r}: expected KEY=VALUE, e.g. search.rrf_k=30")
        node = result
        parts = key.strip().split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = _yaml_scalar(raw)
    return result


def _layer(data: Mapping, source: str) -> Mapping:
    try:
        _check(Schema, data, "", complete=False)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    return data


class Settings:
    """The validated settings: typed sections plus the paths derived from the top-level keys."""

    def __init__(self, data: Mapping, chosen: frozenset[str] = frozenset(), learnt: tuple[str, ...] = ()) -> None:
        self.data = copy.deepcopy(dict(data))  # the merged plain values (re-validated by with_values)
        self.chosen = chosen  # "section.key" set by a layer above the bundled defaults (file, env, override)
        self.learnt = learnt  # "section.key" whose value the nightly fit learnt (never one in `chosen`)
        schema: Schema = _check(Schema, self.data, "", complete=True)
        self.import_ = schema.import_
        self.database = schema.database
        self.models = schema.models
        self.search = schema.search
        self.graph = schema.graph
        self.privacy = schema.privacy
        self.retention = schema.retention
        self.jobs = schema.jobs
        self.curation = schema.curation
        self.knowledge = schema.knowledge
        self.watch = schema.watch
        self._schema = schema

    @property
    def data_dir(self) -> Path:
        value = self._schema.data_dir
        return Path(value).expanduser() if value else locations.default_data_dir()

    @property
    def db_path(self) -> Path:
        value = self._schema.db
        return Path(value).expanduser() if value else self.data_dir / "mindtui.db"

    @property
    def vault(self) -> Path | None:
        value = self._schema.vault
        return Path(value).expanduser() if value else None

    @property
    def types_file(self) -> Path:
        value = self._schema.types_file
        return Path(value).expanduser() if value else locations.bundled_config_file("types.yaml")

    def with_values(self, values: Mapping, source: str = "override") -> "Settings":
        """A copy with some values replaced (nested mapping, checked like any other layer)."""
        return Settings(_merge(copy.deepcopy(self.data), _layer(values, source)), self.chosen | _keys(values),
                        self.learnt)

    def chosen_data(self) -> dict:
        """The values set above the bundled defaults (the user's file, the environment, an
        override), nested as in a config file: what a child process is given, so that it reads
        the same settings and tells the user's choices from learnt values and defaults as this one."""
        out: dict = {}
        for name in sorted(self.chosen):
            section, _, key = name.partition(".")
            if key:
                out.setdefault(section, {})[key] = copy.deepcopy(self.data[section][key])
            else:
                out[section] = copy.deepcopy(self.data[section])
        return out

    def with_learnt(self, section: str, values: Mapping) -> "Settings":
        """A copy with values the nightly fit learnt, except for keys set by the user (the user's
        file, the environment or an override always wins)."""
        kept = {k: v for k, v in values.items() if f"{section}.{k}" not in self.chosen}
        if not kept:
            return self
        merged = _merge(copy.deepcopy(self.data), _layer({section: kept}, "learnt"))
        return Settings(merged, self.chosen, self.learnt + tuple(f"{section}.{k}" for k in kept))

    def with_overrides(self, **values: Any) -> "Settings":
        """A copy with top-level keys replaced (None values are ignored)."""
        return self.with_values({k: v for k, v in values.items() if v is not None}, "command line")


def load_settings(env: Mapping[str, str] | None = None, overrides: Mapping | None = None) -> Settings:
    env = os.environ if env is None else env
    data = _read_yaml(locations.bundled_config_file("mindtui.yaml"))
    chosen: frozenset[str] = frozenset()
    user_file = locations.user_config_file(dict(env))
    if user_file.exists():
        user = _read_yaml(user_file)
        _merge(data, _layer(user, str(user_file)))
        chosen |= _keys(user)
    elif env.get(CONFIG_FILE_ENV):
        raise ConfigError(f"{CONFIG_FILE_ENV} names {user_file}, which does not exist")
    for name, layer in _env_layers(env):
        _merge(data, _layer(layer, name))
        chosen |= _keys(layer)
    if overrides:
        _merge(data, _layer(overrides, "override"))
        chosen |= _keys(overrides)
    return Settings(data, chosen)


def _keys(values: Mapping | None) -> frozenset[str]:
    """The "section.key" (or top-level key) names a layer sets."""
    return frozenset(f"{name}.{key}" if isinstance(inner, Mapping) else name
                     for name, inner in (values or {}).items()
                     for key in (inner if isinstance(inner, Mapping) else [None]))
