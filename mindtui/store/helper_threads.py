"""Process-wide thread pools for the part of a query handed to other cores (made on first use)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

_pools: dict[str, ThreadPoolExecutor] = {}
_lock = threading.Lock()


def pool(name: str, workers: int) -> ThreadPoolExecutor:
    """The pool `name` (its threads named mindtui-NAME), made with `workers` threads on first use."""
    with _lock:
        found = _pools.get(name)
        if found is None:
            found = _pools[name] = ThreadPoolExecutor(max(1, workers), thread_name_prefix=f"mindtui-{name}")
        return found
