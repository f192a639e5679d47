"""Settings: bundled defaults, a user file, MINDTUI_* environment variables."""

from __future__ import annotations

import pytest

from mindtui.config import ConfigError, load_settings
from mindtui.vault.types import load_type_registry


def test_defaults_come_from_the_bundled_file(tmp_path):
    settings = load_settings(env={})
    assert settings.get("import.max_file_bytes") > 0
    assert "Templates/**" in settings.get("import.exclude")
    assert settings.types_file.name == "types.yaml" and settings.types_file.exists()


def test_user_file_then_environment_override(tmp_path):
    user = tmp_path / "mine.yaml"
    user.write_text("db: /data/brain.db\nimport:\n  max_file_bytes: 123\n", encoding="utf-8")
    env = {"MINDTUI_CONFIG_FILE": str(user)}
    settings = load_settings(env=env)
    assert str(settings.db_path) == "/data/brain.db" and settings.get("import.max_file_bytes") == 123
    assert settings.get("import.exclude")  # untouched keys keep their defaults
    env.update({"MINDTUI_DB": "/env/x.db", "MINDTUI_IMPORT__MAX_FILE_BYTES": "456",
                "MINDTUI_IMPORT__EXCLUDE": "[a/**, b/**]"})
    settings = load_settings(env=env)
    assert str(settings.db_path) == "/env/x.db"
    assert settings.get("import.max_file_bytes") == 456 and settings.get("import.exclude") == ["a/**", "b/**"]


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
