"""The meta key/value table."""

from __future__ import annotations

import apsw

# The embedding model whose vectors the store holds (written by the embedding sweep).
EMBEDDING_MODEL_KEY = "embedding_model"
# How many texts the last embedding sweep left for the next run (its budget stopped it): searches
# say that much of the vault is found by full text only meanwhile.
EMBED_REMAINING_KEY = "embed_remaining"
# The vault folder the last import read (absolute), where a note's file is found again.
VAULT_KEY = "vault_root"
# privacy.private_paths as the last import applied them to notes.private.
PRIVACY_KEY = "privacy_paths"
# The last search_log id whose results refreshed knowledge importance (knowledge.consolidate).
SEARCH_WATERMARK_KEY = "knowledge_search_seen"


def get_meta(conn: apsw.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def set_meta(conn: apsw.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def delete_meta(conn: apsw.Connection, key: str) -> bool:
    """Remove the key; whether it was there."""
    conn.execute("DELETE FROM meta WHERE key = ?", (key,))
    return conn.changes() > 0


def get_meta_if_any(conn: apsw.Connection, key: str) -> str | None:
    """Like get_meta, for a file that may not have the table yet (a database not made by mindtui)."""
    if conn.execute("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'meta'").fetchone() is None:
        return None
    return get_meta(conn, key)


def data_version(conn: apsw.Connection) -> int:
    """Moves whenever another connection commits: a cache built on this connection is stale then."""
    return conn.execute("PRAGMA data_version").fetchone()[0]

