"""The connection pool of a long-lived process: bounded, one connection per thread, closed on close()."""

from __future__ import annotations

import threading
import time

import apsw
import pytest

from mindtui.audience import Audience
from mindtui.store import open_database
from mindtui.store.pool import ConnectionPool

THREADS = 12


def make_pool(db_path, **options) -> ConnectionPool:
    open_database(db_path).close()
    return ConnectionPool(db_path, audience=Audience.AGENT, busy_timeout_ms=60_000, **options)


def wait_until(condition: threading.Condition, predicate) -> None:
    with condition:
        assert condition.wait_for(predicate, timeout=60)


def poll_until(predicate) -> None:
    """For a state nothing signals (threads blocked inside the pool): look again until it holds."""
    deadline = time.monotonic() + 60
    while not predicate():
        assert time.monotonic() < deadline, "the state never came"
        time.sleep(0.005)


def test_a_thread_asking_again_gets_the_connection_it_holds(db_path):
    pool = make_pool(db_path)
    with pool.connection() as outer:
        outer.conn.execute("CREATE TEMP TABLE mine(x)")
        outer.conn.execute("BEGIN")
        outer.conn.execute("INSERT INTO mine VALUES (1)")
        with pool.connection() as inner:  # a service call inside another
            assert inner is outer
        # the inner use ending neither rolled back the outer's transaction nor handed the connection on
        assert outer.conn.in_transaction
        assert outer.conn.execute("SELECT count(*) FROM mine").fetchone()[0] == 1
        assert pool.stats()["open"] == 1
    pool.close()


def test_at_most_max_connections_exist_and_the_others_wait(db_path):
    pool = make_pool(db_path, max_connections=3)
    state = threading.Condition()
    inside, seen, release = [], set(), threading.Event()

    def worker():
        with pool.connection() as pooled:
            with state:
                inside.append(pooled)
                seen.add(id(pooled.conn))
                state.notify_all()
            release.wait(60)
            with state:
                inside.remove(pooled)

    threads = [threading.Thread(target=worker) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    wait_until(state, lambda: len(inside) == 3)
    poll_until(lambda: pool.stats()["waiting"] == THREADS - 3 or len(inside) > 3)
    assert pool.stats()["open"] == 3 and len(inside) == 3
    release.set()
    for thread in threads:
        thread.join(60)
    assert len(seen) == 3  # twelve threads, three connections reused
    assert pool.stats() == {"open": 3, "idle": 3, "waiting": 0}
    pool.close()


def test_close_closes_every_connection_also_one_in_use(db_path):
    pool = make_pool(db_path)
    ready, done = threading.Event(), threading.Event()
    held = []

    def holder():
        with pool.connection() as pooled:
            held.append(pooled)
            ready.set()
            done.wait(60)

    thread = threading.Thread(target=holder)
    thread.start()
    assert ready.wait(60)
    with pool.connection() as idle:  # a second one, idle once this ends
        assert idle is not held[0]
    pool.close()
    with pytest.raises(apsw.ConnectionClosedError):
        idle.conn.execute("SELECT 1")  # the idle one at once
    done.set()
    thread.join(60)
    with pytest.raises(apsw.ConnectionClosedError):
        held[0].conn.execute("SELECT 1")  # the one in use when its thread handed it back
    assert pool.stats()["open"] == 0
