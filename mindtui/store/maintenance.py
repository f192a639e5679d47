"""Store upkeep the nightly does once everything else is written: merge the full-text indexes'
segments (FTS5 `optimize`: a million chunks written note by note leave many small b-trees, and a
query reads each) and let SQLite refresh its planner statistics (`PRAGMA optimize`)."""

from __future__ import annotations

import apsw

FTS_TABLES = ("chunks_fts", "knowledge_fts")


def store_bytes(conn: apsw.Connection) -> int:
    """The database file's size as SQLite counts it (pages in use and free), without the WAL."""
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    return pages * conn.execute("PRAGMA page_size").fetchone()[0]


def optimize(conn: apsw.Connection) -> dict:
    """FTS5 optimize of each full-text table (one transaction each), then PRAGMA optimize."""
    optimized = []
    for table in FTS_TABLES:
        with conn:
            # The table name cannot be bound; it comes from the constant above, never from input.
            conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
        optimized.append(table)
    conn.execute("PRAGMA optimize")
    return {"fts_optimized": optimized, "db_bytes": store_bytes(conn)}
