"""The service package, imported on first use instead of at start.

Importing mindtui.service pulls in the whole stack (SQLite, numpy, the search engine, the
importer, ...): about as long as Textual itself. The app paints its first screen without it
and imports it in a worker right after; screens reach it through `service_api()`, which is
instant once that import has run (and otherwise waits for it, as any import would).
"""

from __future__ import annotations

import importlib
from types import ModuleType


def service_api() -> ModuleType:
    return importlib.import_module("mindtui.service")
