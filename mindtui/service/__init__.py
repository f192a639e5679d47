"""The service core under every front end (CLI, TUI, MCP): `Service` is the one façade.

Front ends import from here (and from `mindtui.config`), never from the layers below.
"""

from mindtui.audience import Audience
from mindtui.errors import (
    Cancelled, ConfigError, DatabaseError, InputError, JobLockedError, MindtuiError, ModelUnavailableError,
    NoteNotFound, NotAllowed, OperationFailed,
)
from mindtui.graph.neighbours import GROUPS as NEIGHBOUR_GROUPS
from mindtui.graph.stats import format_stats as format_graph_stats
from mindtui.jobs.runner import JobHooks, JobResult
from mindtui.progress import CancelToken
from mindtui.search.engine import MODES as SEARCH_MODES
from mindtui.search.engine import SearchOptions, SearchResponse, SearchResult
from mindtui.service.core import Service
from mindtui.service.curation import KIND_NAMES as CURATION_KINDS
from mindtui.service.curation import STATUSES as CURATION_STATUSES
from mindtui.service.curation import ActionOutcome, Card, NoteChanged
from mindtui.service.curation import kind_actions as curation_kind_actions
from mindtui.service.evaluate import KINDS as EVAL_KINDS
from mindtui.service.evaluate import compare_reports as compare_eval_reports
from mindtui.service.evaluate import format_report as format_eval_report
from mindtui.service.job_process import JobOutcome, JobProcess
from mindtui.service.views import NeighboursView, NoteView
from mindtui.store.failures import store_failure

__all__ = [
    "Audience", "Cancelled", "CancelToken", "ConfigError", "DatabaseError", "EVAL_KINDS", "InputError",
    "JobHooks", "JobLockedError", "JobOutcome", "JobProcess", "JobResult", "MindtuiError", "ModelUnavailableError", "NEIGHBOUR_GROUPS", "NeighboursView",
    "NoteNotFound", "NoteView", "NotAllowed", "OperationFailed", "SEARCH_MODES", "SearchOptions",
    "SearchResponse", "SearchResult", "Service", "compare_eval_reports", "format_eval_report", "format_graph_stats",
    "store_failure",
]
# The curation queue (Service.curation_*).
__all__ += ["ActionOutcome", "CURATION_KINDS", "CURATION_STATUSES", "Card", "NoteChanged", "curation_kind_actions"]
# Knowledge items (Service.knowledge_*).
from mindtui.knowledge.proposal import SCHEMA as KNOWLEDGE_SCHEMA  # noqa: E402
from mindtui.knowledge.proposal import TYPES as KNOWLEDGE_TYPES  # noqa: E402
from mindtui.knowledge.writer import Decision  # noqa: E402
from mindtui.search.knowledge import KINDS as SEARCH_KINDS  # noqa: E402
from mindtui.service.knowledge import KnowledgeView  # noqa: E402
from mindtui.store.knowledge_store import STATUSES as KNOWLEDGE_STATUSES  # noqa: E402

__all__ += ["Decision", "KNOWLEDGE_SCHEMA", "KNOWLEDGE_STATUSES", "KNOWLEDGE_TYPES", "KnowledgeView", "SEARCH_KINDS"]
# The live vault (Service.watch).
from mindtui.jobs.watch import VaultChange, VaultWatcher  # noqa: E402

__all__ += ["VaultChange", "VaultWatcher"]
