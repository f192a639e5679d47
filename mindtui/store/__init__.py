"""The store: one SQLite file (apsw + sqlite-vec) and the query functions over it.

Nothing is opened at import time; call `open_database(path)`.
"""

from mindtui.store.connection import (
    APPLICATION_ID,
    DatabaseError,
    DatabaseLockedError,
    DatabaseTooNewError,
    open_database,
)

__all__ = [
    "APPLICATION_ID",
    "DatabaseError",
    "DatabaseLockedError",
    "DatabaseTooNewError",
    "open_database",
]
