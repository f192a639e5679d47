"""Where mindtui keeps its files: bundled defaults, the user's config and data folders."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

import platformdirs

APP_NAME = "mindtui"


def bundled_config_file(name: str) -> Path:
    """A file from the top-level config/ folder, shipped in the package as mindtui._defaults."""
    return Path(str(resources.files("mindtui._defaults").joinpath(name)))


def migrations_dir() -> Path:
    """The numbered *.sql migrations, shipped in the package as mindtui._migrations."""
    return Path(str(resources.files("mindtui._migrations")))


def user_config_file(env: dict[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get("MINDTUI_CONFIG_FILE"):
        return Path(env["MINDTUI_CONFIG_FILE"]).expanduser()
    return Path(platformdirs.user_config_dir(APP_NAME)) / "mindtui.yaml"


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir(APP_NAME))

