"""The meta key/value table."""

from __future__ import annotations

import apsw

# The embedding model whose vectors the store holds (written by the embedding sweep).
EMBEDDING_MODEL_KEY = "embedding_model"
# The vault folder the last import read (absolute), where a note's file is found again.
VAULT_KEY = "vault_root"


def get_meta(conn: apsw.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def set_meta(conn: apsw.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )
