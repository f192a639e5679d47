"""llama.cpp kept quiet without taking the process's stdout and stderr away.

llama-cpp-python's `verbose=False` silences a model's load by pointing fd 1 and fd 2 at
/dev/null, and sys.stdout and sys.stderr at a null file, for the whole process while the load
runs (`_utils.suppress_stdout_stderr`, about a second). Everything other threads wrote meanwhile
was lost: the TUI draws on fd 2 while the model loads in a worker (frames and keystrokes' echo
gone), and the MCP server and the watcher write their diagnostics there (a probe lost 19 of 66
lines). llama.cpp's own messages all pass through its log callback, so `quiet()` sets one that
keeps the errors (for the message of a load that fails) and drops the rest, and swaps the
library's fd redirect for one that does nothing.
"""

from __future__ import annotations

import collections
import ctypes
import threading

_ERROR = 4  # enum ggml_log_level: NONE 0, DEBUG 1, INFO 2, WARN 3, ERROR 4, CONT 5 (ggml.h)
_errors: collections.deque[str] = collections.deque(maxlen=8)
_lock = threading.Lock()
_callback = None  # the ctypes callback, kept alive while llama.cpp may call it


class _NoRedirect:
    """What replaces suppress_stdout_stderr: the same interface, the file descriptors left alone."""

    def __init__(self, disable: bool = True) -> None:
        self.disable = disable

    def __enter__(self) -> "_NoRedirect":
        return self

    def __exit__(self, *_exc) -> None:
        return None


def quiet(llama_cpp) -> None:
    """Install the log callback and the no-op redirect once per process (idempotent)."""
    global _callback
    with _lock:
        if _callback is not None:
            return

        @llama_cpp.llama_log_callback
        def errors_only(level: int, text: bytes, _user_data: ctypes.c_void_p) -> None:
            if level == _ERROR and text:
                _errors.append(text.decode("utf-8", errors="replace").strip())

        llama_cpp.llama_log_set(errors_only, ctypes.c_void_p(0))
        _callback = errors_only
        for name in ("llama", "_internals"):
            module = getattr(llama_cpp, name, None)
            if module is not None and hasattr(module, "suppress_stdout_stderr"):
                module.suppress_stdout_stderr = _NoRedirect


def recent_errors() -> str:
    """llama.cpp's last error lines, joined (empty when it logged none), and forget them."""
    with _lock:
        lines = [line for line in _errors if line]
        _errors.clear()
    return "; ".join(lines)
