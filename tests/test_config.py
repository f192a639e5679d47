"""Settings: bundled defaults, a user file, MINDTUI_* environment variables, one schema for all."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest
import yaml

from mindtui import config, locations
from mindtui.config import ConfigError, load_settings
from mindtui.vault.types import load_type_registry


def test_defaults_come_from_the_bundled_file(tmp_path):
    settings = load_settings(env={})
    assert settings.import_.max_file_bytes == 2_000_000
    assert "Templates/**" in settings.import_.exclude
    assert settings.types_file.name == "types.yaml" and settings.types_file.exists()


def _leaves(data: dict, prefix: str = "") -> set[str]:
    out = set()
    for key, value in data.items():
        if isinstance(value, dict):
            out |= _leaves(value, f"{prefix}{key}.")
        else:
            out.add(prefix + key)
    return out


def _schema_leaves(cls=config.Schema, prefix: str = "") -> set[str]:
    out = set()
    for key, (name, kind, _meta) in config._fields(cls).items():
        out |= _schema_leaves(kind, f"{prefix}{key}.") if dataclasses.is_dataclass(kind) else {prefix + key}
    return out


def test_the_schema_covers_every_key_of_the_bundled_file_and_nothing_else():
    bundled = yaml.safe_load(locations.bundled_config_file("mindtui.yaml").read_text(encoding="utf-8"))
    assert _leaves(bundled) == _schema_leaves()
    # ...and every key is explained by a comment on its line or right above it
    lines = locations.bundled_config_file("mindtui.yaml").read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines):
        key, sep, value = line.strip().partition(":")
        if line.startswith("#") or not sep or not value.strip() or key.startswith("#"):
            continue
        above = next((l.strip() for l in reversed(lines[:number]) if l.strip()), "")
        assert "#" in line or above.startswith("#"), f"config/mindtui.yaml line {number + 1}: {key} has no comment"


def test_user_file_then_environment_override(tmp_path):
    user = tmp_path / "mine.yaml"
    user.write_text("db: /data/brain.db\nimport:\n  max_file_bytes: 123\n", encoding="utf-8")
    env = {"MINDTUI_CONFIG_FILE": str(user)}
    settings = load_settings(env=env)
    assert str(settings.db_path) == "/data/brain.db" and settings.import_.max_file_bytes == 123
    assert settings.import_.exclude  # untouched keys keep their defaults
    env.update({"MINDTUI_DB": "/env/x.db", "MINDTUI_IMPORT__MAX_FILE_BYTES": "456",
                "MINDTUI_IMPORT__EXCLUDE": "[a/**, b/**]"})
    settings = load_settings(env=env)
    assert str(settings.db_path) == "/env/x.db"
    assert settings.import_.max_file_bytes == 456 and settings.import_.exclude == ("a/**", "b/**")


@pytest.mark.parametrize("text, message", [
    ("serach:\n  fusion: rrf\n", "unknown setting serach"),
    ("search:\n  fusoin: rrf\n", "unknown setting search.fusoin"),
    ("search:\n  fusion: magic\n", "search.fusion is 'magic'; expected one of convex, rrf"),
    ("search:\n  candidate_pool: many\n", "search.candidate_pool is 'many'; expected a whole number"),
    ("search:\n  candidate_pool: 0\n", "search.candidate_pool is 0; expected a value >= 1"),
    ("search:\n  convex_alpha: 1.5\n", "search.convex_alpha is 1.5; expected a value >= 0.0 and <= 1.0"),
    ("import:\n  follow_external_symlinks: sometimes\n", "import.follow_external_symlinks is 'sometimes'"),
    ("import:\n  exclude: [1, 2]\n", "import.exclude is [1, 2]; expected a list of strings"),
    ("privacy: [a]\n", "privacy must be a mapping"),
])
def test_a_bad_user_file_names_the_key_and_the_file(tmp_path, text, message):
    user = tmp_path / "mine.yaml"
    user.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as error:
        load_settings(env={"MINDTUI_CONFIG_FILE": str(user)})
    assert message in str(error.value) and str(user) in str(error.value)


@pytest.mark.parametrize("name, value, message", [
    ("MINDTUI_SEARCH__FUSOIN", "rrf", "MINDTUI_SEARCH__FUSOIN: unknown setting search.fusoin"),
    ("MINDTUI_SEARCH__MIN_COSINE", "2", "MINDTUI_SEARCH__MIN_COSINE: search.min_cosine is 2"),
    ("MINDTUI_RETENTION__SEARCH_LOG_DAYS", "-1", "retention.search_log_days is -1"),
    ("MINDTUI_DBB", "x.db", "MINDTUI_DBB: not a mindtui setting"),
    ("MINDTUI_IMPORT__MAX_DELETE_FRACTION", ".nan", "import.max_delete_fraction is nan; expected a finite number"),
    ("MINDTUI_SEARCH__RRF_K", ".inf", "search.rrf_k is inf; expected a finite number"),
    ("MINDTUI_SEARCH__RRF_WEIGHTS", "{vektor: 5}", "unknown setting search.rrf_weights.vektor"),
])
def test_a_bad_environment_variable_names_itself(name, value, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(".", r"\.")):
        load_settings(env={name: value})


def test_a_configuration_error_is_exit_5_with_the_message_on_stderr(tmp_path):
    import os

    env = {**os.environ, "MINDTUI_SEARCH__CANDIDATE_POOL": "-3"}
    done = subprocess.run([sys.executable, "-m", "mindtui", "status", "--db", str(tmp_path / "x.db")],
                          capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 5 and done.stdout == ""
    assert "MINDTUI_SEARCH__CANDIDATE_POOL: search.candidate_pool is -3" in done.stderr


def test_a_path_from_the_environment_is_taken_as_written():
    assert load_settings(env={"MINDTUI_MODELS__DIR": "~"}).models.dir == "~"  # YAML would read null
    assert load_settings(env={"MINDTUI_MODELS__THREADS": "3"}).models.threads == 3  # numbers still parse


def test_overrides_are_checked_like_any_layer():
    settings = load_settings(env={})
    assert settings.with_values({"search": {"rrf_k": 30}}).search.rrf_k == 30.0
    with pytest.raises(ConfigError, match="unknown setting search.rrf"):
        settings.with_values({"search": {"rrf": 30}}, "--set")


def test_data_dir_decides_the_default_db(tmp_path):
    settings = load_settings(env={"MINDTUI_DATA_DIR": str(tmp_path)})
    assert settings.db_path == tmp_path / "mindtui.db"


def test_types_file_from_environment(tmp_path):
    custom = tmp_path / "types.yaml"
    custom.write_text("default_type: zettel\ntypes:\n  zettel: {retriever_weight: 2.0, edge_defaults: [Knows About]}\n",
                      encoding="utf-8")
    settings = load_settings(env={"MINDTUI_TYPES_FILE": str(custom)})
    registry = load_type_registry(settings.types_file)
    assert registry.default_type == "zettel" and registry.note_type("anything").retriever_weight == 2.0
    assert registry.note_type("zettel").edge_defaults == ("knows_about",)


def test_bad_files_are_clear_errors(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("import: [unclosed\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="invalid YAML"):
        load_settings(env={"MINDTUI_CONFIG_FILE": str(broken)})
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(env={"MINDTUI_CONFIG_FILE": str(tmp_path / "absent.yaml")})
    bad_types = tmp_path / "types.yaml"
    bad_types.write_text("types:\n  x: {chunk_profile: nope}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown chunk profile"):
        load_type_registry(bad_types)
    bad_types.write_text("chunk_profiles:\n  big: {max_tokens: 9000}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="max_tokens"):
        load_type_registry(bad_types)
