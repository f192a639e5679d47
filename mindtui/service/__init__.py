"""The service core under every front end (CLI, TUI, MCP): `Service` is the one façade.

Front ends import from here (and from `mindtui.config`), never from the layers below. Each name
is imported on its first use (PEP 562): the whole stack takes ~0.3-0.45 s to import, and the TUI's
first full-text answer (service.fulltext) must not wait for it.
"""

from __future__ import annotations

import importlib

# name -> (module, attribute in it); the attribute is the name unless given.
_EXPORTS: dict[str, tuple[str, str | None]] = {
    "Audience": ("mindtui.audience", None),
    **{name: ("mindtui.errors", None) for name in (
        "AmbiguousNote", "Cancelled", "ConfigError", "DatabaseError", "InputError", "JobLockedError", "MindtuiError",
        "ModelUnavailableError", "NotFound", "NoteNotFound", "NotAllowed", "OperationFailed")},
    "NEIGHBOUR_GROUPS": ("mindtui.graph.neighbours", "GROUPS"),
    "format_graph_stats": ("mindtui.graph.stats", "format_stats"),
    "JobHooks": ("mindtui.jobs.runner", None),
    "JobResult": ("mindtui.jobs.runner", None),
    "CancelToken": ("mindtui.progress", None),
    "not_utf8": ("mindtui.text.names", None),
    "SEARCH_MODES": ("mindtui.search.engine", "MODES"),
    "SearchOptions": ("mindtui.search.engine", None),
    "SearchResponse": ("mindtui.search.engine", None),
    "SearchResult": ("mindtui.search.engine", None),
    "Service": ("mindtui.service.core", None),
    "EVAL_KINDS": ("mindtui.service.evaluate", "KINDS"),
    "compare_eval_reports": ("mindtui.service.evaluate", "compare_reports"),
    "format_eval_report": ("mindtui.service.evaluate", "format_report"),
    "JobOutcome": ("mindtui.service.job_process", None),
    "JobProcess": ("mindtui.service.job_process", None),
    "NeighboursView": ("mindtui.service.views", None),
    "NoteView": ("mindtui.service.views", None),
    "store_failure": ("mindtui.store.failures", None),
    "PARALLEL_CALLS": ("mindtui.store.pool", "MAX_CONNECTIONS"),  # a service serves this many calls at once
    # The curation queue (Service.curation_*).
    "ActionOutcome": ("mindtui.service.curation", None),
    "CURATION_KINDS": ("mindtui.service.curation", "KIND_NAMES"),
    "CURATION_STATUSES": ("mindtui.service.curation", "STATUSES"),
    "Card": ("mindtui.service.curation", None),
    "NoteChanged": ("mindtui.service.curation", None),
    "curation_kind_actions": ("mindtui.service.curation", "kind_actions"),
    # Knowledge items (Service.knowledge_*).
    "Decision": ("mindtui.knowledge.writer", None),
    "KNOWLEDGE_SCHEMA": ("mindtui.knowledge.proposal", "SCHEMA"),
    "KNOWLEDGE_STATUSES": ("mindtui.store.knowledge_store", "STATUSES"),
    "KNOWLEDGE_TYPES": ("mindtui.knowledge.proposal", "TYPES"),
    "KnowledgeView": ("mindtui.service.knowledge", None),
    "SEARCH_KINDS": ("mindtui.search.knowledge", "KINDS"),
    # The live vault (Service.watch).
    "VaultChange": ("mindtui.jobs.watch", None),
    "VaultWatcher": ("mindtui.jobs.watch", None),
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = _EXPORTS[name]
    value = getattr(importlib.import_module(module), attribute or name)
    globals()[name] = value  # the next use is an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
