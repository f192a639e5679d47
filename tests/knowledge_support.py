"""A small vault with entity notes, and the settings the knowledge writer reads."""

from __future__ import annotations

from mindtui.config import load_settings

VAULT_FILES = {
    "Personen/Emre.md": "# Emre\n\nEmre leads sales.\n",
    "Projekte/Mindtui.md": "# Mindtui\n\nA second brain in the terminal.\n",
    "Notizen/Storage.md": "# Storage\n\nWe compared SQLite and Postgres for the index.\n",
    "Notizen/Secret.md": "---\nai_processing: none\n---\n# Secret\n\nEmre earns a lot.\n",
    "Notizen/Private.md": "---\nprivate: true\n---\n# Private\n\nEmre prefers tea.\n",
    "Personen/Hidden Person.md": "---\nprivate: true\n---\n# Hidden Person\n\nSomeone.\n",
}


def write_vault(vault) -> None:
    for path, text in VAULT_FILES.items():
        vault.write(path, text, dedent=False)


def knowledge_settings(**knowledge):
    """The default settings, the knowledge section overridden by keyword."""
    return load_settings(overrides={"knowledge": knowledge} if knowledge else None)


def proposal(**fields) -> dict:
    return {"schema": "knowledge_proposal.v1", "type": "fact", "title": "Emre leads sales", **fields}
