"""SQL that stops once its front end no longer wants the answer: the TUI's search for a query the
user has typed past. At a million chunks such a search runs 0.1-0.8 s after the next key, and the
search for that key waits behind it for a core.

A progress handler looks at the search's CancelToken every PROGRESS_STEPS SQLite instructions
(about a tenth of a millisecond): SQLite's own sqlite3_interrupt() is lost when it comes between
two statements, a token is not.
"""

from __future__ import annotations

import weakref
from contextlib import contextmanager
from typing import Iterator

import apsw

from mindtui.progress import CancelToken

PROGRESS_STEPS = 5_000
HANDLER_ID = "mindtui-cancel"
# The token each connection stops on, while it does: SQL that a connection hands to others (the
# full-text ranking's other threads, store.fts_parallel) stops on the same one.
_TOKENS: "weakref.WeakKeyDictionary[apsw.Connection, CancelToken]" = weakref.WeakKeyDictionary()


def token_of(conn: apsw.Connection) -> CancelToken | None:
    """The CancelToken SQL on `conn` stops on now (inside stopping_on), else None."""
    return _TOKENS.get(conn)


@contextmanager
def stopping_on(conn: apsw.Connection, cancel: CancelToken | None) -> Iterator[None]:
    """Inside, SQL on `conn` stops (Cancelled) once `cancel` is cancelled, from any thread."""
    if cancel is None:
        yield
        return
    cancel.check()
    conn.set_progress_handler(lambda: cancel.cancelled, PROGRESS_STEPS, id=HANDLER_ID)
    outer = _TOKENS.get(conn)
    _TOKENS[conn] = cancel
    try:
        yield
    except apsw.InterruptError:
        cancel.check()  # ours: Cancelled; another's interrupt goes on as it was
        raise
    finally:
        conn.set_progress_handler(None, id=HANDLER_ID)
        if outer is None:
            _TOKENS.pop(conn, None)
        else:
            _TOKENS[conn] = outer
