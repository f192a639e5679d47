"""A search the front end no longer wants stops: its SQL is interrupted from another thread by a
progress handler that looks at its CancelToken (store.interrupt), and the TUI cancels the
searches of a query as soon as the next key changes it."""

from __future__ import annotations

import threading
import time

import pytest
from tui_support import fixed_service, pilot_app, settle

from mindtui.errors import Cancelled
from mindtui.progress import CancelToken
from mindtui.service import SearchOptions
from mindtui.store import open_database
from mindtui.store.interrupt import stopping_on

ENDLESS = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n"


@pytest.fixture
def conn(db_path):
    connection = open_database(db_path)
    yield connection
    connection.close()


def test_sql_stops_soon_after_its_token_is_cancelled_from_another_thread(conn):
    token = CancelToken()
    threading.Timer(0.2, token.cancel).start()
    started = time.monotonic()
    with pytest.raises(Cancelled):
        with stopping_on(conn, token):
            conn.execute(ENDLESS).fetchall()
    assert time.monotonic() - started < 5
    assert conn.execute("SELECT 40 + 2").fetchone()[0] == 42  # the connection goes on, the handler is gone


def test_a_cancelled_token_stops_before_any_sql_and_none_changes_nothing(conn):
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        with stopping_on(conn, token):
            raise AssertionError("nothing runs for a search nobody wants")
    with stopping_on(conn, None):
        assert conn.execute("SELECT 1").fetchone()[0] == 1


def test_a_service_search_with_a_cancelled_token_raises_cancelled(sample_vault, db_path):
    with fixed_service(sample_vault.root, db_path) as service:
        options = SearchOptions(mode="fts", log=False)
        assert service.search("Zettelkasten", options, cancel=CancelToken()).results
        token = CancelToken()
        token.cancel()
        with pytest.raises(Cancelled):
            service.search("Zettelkasten", options, cancel=token)
        with pytest.raises(Cancelled):
            service.search_count("Zettelkasten", options, cancel=token)


async def test_the_tui_cancels_the_search_of_a_query_typed_past(sample_vault, db_path, monkeypatch):
    with fixed_service(sample_vault.root, db_path) as service:
        seen: dict[str, CancelToken] = {}
        search = service.search

        def slow_first(query, options=None, cancel=None, **kwargs):
            seen.setdefault(query, cancel)
            if query == "Z":  # a search slow as at a million chunks: it runs until it is cancelled
                deadline = time.monotonic() + 30
                while not cancel.cancelled and time.monotonic() < deadline:
                    time.sleep(0.005)
            return search(query, options, cancel=cancel, **kwargs)

        monkeypatch.setattr(service, "search", slow_first)
        app = pilot_app(service)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("Z")
            while "Z" not in seen:
                await pilot.pause(0.01)
            await pilot.press(*"ettelkasten")
            await settle(pilot)
            assert seen["Z"].cancelled  # stopped by the next key, not run to its end
            assert not seen["Zettelkasten"].cancelled
            assert app.screen.results and app.screen.results[0].title == "Zettelkasten"
            assert not [n for n in app._notifications if n.severity == "error"]
