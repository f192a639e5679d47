"""A module imported on its first use instead of with the module that names it.

numpy (with sqlite-vec's Python package, which imports it) takes longer to import than the rest of
the search engine: a full-text search, which never touches a vector, waited for it (the TUI's first
results after launch). `np = lazy_module("numpy")` reads like the import it replaces.
"""

from __future__ import annotations

import importlib
from types import ModuleType


class _LazyModule:
    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attribute: str):
        module = self._module
        if module is None:  # importlib's module locks make a first use from two threads safe
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attribute)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}{' (imported)' if self._module is not None else ''}>"


def lazy_module(name: str):
    """The module `name`, imported when one of its attributes is first read."""
    return _LazyModule(name)
