"""The kinds of failure a front end must tell apart. Every layer raises these (or subclasses
defined beside the code that raises them); front ends map a kind to what they show: the CLI
to an exit code, the TUI to a notification, the MCP server to a tool error.

Each message is for the user: it says what is wrong and, where it can, what to do.
"""

from __future__ import annotations

# What a `mindtui` process exits with (the CLI sets them; a parent, such as the TUI's job
# runner, reads them from its child): one definition for both sides.
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_LOCKED, EXIT_DATABASE, EXIT_CONFIG, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 5, 130


class MindtuiError(Exception):
    """Base of every error mindtui reports to its user."""


class ConfigError(MindtuiError):
    """A configuration file or value that cannot be used (exit code 5)."""


class DatabaseError(MindtuiError):
    """The database cannot be used: missing, foreign, newer, corrupt or locked (exit code 4)."""


class JobLockedError(MindtuiError):
    """Another mindtui job holds the lock for this database (exit code 3)."""


class InputError(MindtuiError):
    """An argument or input file that cannot be used, e.g. a bad evaluation source (exit code 2)."""


class NotFound(MindtuiError):
    """An id or name that names nothing the audience may see: a knowledge item, a curation card (exit code 1).

    Not a usage error: the command was well formed, the thing is not there (or hidden, which reads the same).
    """


class NoteNotFound(NotFound):
    """NOTE names no note the audience may see, or several: the message lists candidates (exit code 1)."""


class AmbiguousNote(NoteNotFound):
    """NOTE names several notes the audience may see (the message lists them; exit code 1): an
    MCP client is told `ambiguous`, not `not_found`, so it asks again by path instead of giving up."""


class NotAllowed(MindtuiError):
    """The audience may not do this (an agent starting a job, for instance) (exit code 2)."""


class OperationFailed(MindtuiError):
    """A job step, a model or another operation failed; its data so far is kept (exit code 1).

    `report` carries what the operation did before it failed (a job stores it with the error).
    """

    def __init__(self, message: str, report: object | None = None) -> None:
        super().__init__(message)
        self.report = report


class ModelUnavailableError(OperationFailed):
    """A model file is missing, corrupt or cannot be loaded; the message says what to do."""


class MassDeleteRefused(OperationFailed):
    """An import would delete more notes than `import.max_delete_fraction` allows."""


class Cancelled(MindtuiError):
    """The user cancelled a long operation; it stopped at a safe point."""
