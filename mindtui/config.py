"""Settings: bundled defaults, then the user's file, then MINDTUI_* environment variables.

The result is a plain nested dict wrapped in `Settings`, whose properties name the values
the code uses. Nothing here touches the database or the vault.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from mindtui import locations

ENV_PREFIX = "MINDTUI_"
# Environment variables that name a top-level key directly (MINDTUI_DB -> db).
_TOP_LEVEL_ENV = {"DB": "db", "VAULT": "vault", "DATA_DIR": "data_dir", "TYPES_FILE": "types_file"}


class ConfigError(Exception):
    """A configuration file or value that cannot be used; the message says which and why."""


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


def _env_overrides(env: Mapping[str, str]) -> dict:
    """MINDTUI_DB=x -> {"db": x}; MINDTUI_IMPORT__MAX_FILE_BYTES=5 -> {"import": {"max_file_bytes": 5}}."""
    result: dict = {}
    for name, raw in env.items():
        if not name.startswith(ENV_PREFIX) or name == "MINDTUI_CONFIG_FILE":
            continue
        rest = name[len(ENV_PREFIX):]
        if rest in _TOP_LEVEL_ENV:
            result[_TOP_LEVEL_ENV[rest]] = raw
            continue
        if "__" not in rest:
            continue  # not a settings variable (e.g. MINDTUI_TEST_*); ignore rather than guess
        keys = [part.lower() for part in rest.split("__")]
        try:
            value = yaml.safe_load(raw) if raw.strip() else raw
        except yaml.YAMLError:
            value = raw
        node = result
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = value
    return result


@dataclass
class Settings:
    data: dict = field(default_factory=dict)

    def get(self, dotted: str, default: Any = None) -> Any:
        node: Any = self.data
        for part in dotted.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]
        return node

    @property
    def data_dir(self) -> Path:
        value = self.data.get("data_dir")
        return Path(value).expanduser() if value else locations.default_data_dir()

    @property
    def db_path(self) -> Path:
        value = self.data.get("db")
        return Path(value).expanduser() if value else self.data_dir / "mindtui.db"

    @property
    def vault(self) -> Path | None:
        value = self.data.get("vault")
        return Path(value).expanduser() if value else None

    @property
    def types_file(self) -> Path:
        value = self.data.get("types_file")
        return Path(value).expanduser() if value else locations.bundled_config_file("types.yaml")

    def with_overrides(self, **values: Any) -> "Settings":
        """A copy with top-level keys replaced (None values are ignored)."""
        data = copy.deepcopy(self.data)
        data.update({k: v for k, v in values.items() if v is not None})
        return Settings(data)


def load_settings(env: Mapping[str, str] | None = None, overrides: Mapping | None = None) -> Settings:
    env = os.environ if env is None else env
    data = _read_yaml(locations.bundled_config_file("mindtui.yaml"))
    user_file = locations.user_config_file(dict(env))
    if user_file.exists():
        _merge(data, _read_yaml(user_file))
    elif env.get("MINDTUI_CONFIG_FILE"):
        raise ConfigError(f"MINDTUI_CONFIG_FILE names {user_file}, which does not exist")
    _merge(data, _env_overrides(env))
    if overrides:
        _merge(data, overrides)
    return Settings(data)
