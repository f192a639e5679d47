"""One model holder per process: each model loaded once, behind a lock, shared by all threads.

The embedder takes ~0.9 s and ~490 MB to load, so a process (the TUI, the MCP server, a job)
keeps one and every thread uses it (llama.cpp calls are serialised by the embedder's own lock).
Services acquire the holder when they open and release it when they close; the last release
frees the models. A failed load is remembered (with its reason) so that a broken model costs
one attempt, not one per keystroke; after `models.retry_after_s` the next use tries again (a
long-lived process heals once the model is fixed), and `forget_failures()` allows a try at once.
"""

from __future__ import annotations

import atexit
import threading
import time
from dataclasses import dataclass
from typing import Callable

from mindtui.config import Settings
from mindtui.errors import ModelUnavailableError
from mindtui.models.embedder import Embedder
from mindtui.models.files import ensure_embedding_model, reranker_path, threads
from mindtui.models.reranker import Reranker

NOT_LOADED, LOADING, READY, UNAVAILABLE = "not loaded", "loading", "ready", "unavailable"
LOADER_THREAD = "mindtui-model-load"

Say = Callable[[str], None]


@dataclass(frozen=True)
class ModelState:
    role: str
    status: str  # not loaded | loading | ready | unavailable
    reason: str = ""

    def as_dict(self) -> dict:
        return {"role": self.role, "status": self.status, "reason": self.reason}


def _real_embedder(settings: Settings, say: Say) -> Embedder:
    model = ensure_embedding_model(settings, say)
    embedder = Embedder(model.path, model.model_id, threads(settings.models.threads))
    embedder.dim  # load now: the caller asked for a ready model
    return embedder


def _real_reranker(settings: Settings):
    path = reranker_path(settings)
    return None if path is None else Reranker(path, threads(settings.models.reranker_threads))


class ModelHolder:
    def __init__(self, embedder_factory: Callable[[Settings, Say], object] | None = None,
                 reranker_factory: Callable[[Settings], object | None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        # A test may hand in factories for fakes (named so) and a clock; everything else uses the real ones.
        self._embedder_factory = embedder_factory or _real_embedder
        self._reranker_factory = reranker_factory or _real_reranker
        self._clock = clock
        self._lock = threading.Lock()  # guards the fields below; never held while a model loads
        self._load_lock = threading.Lock()  # one load at a time
        self._embedder = None
        self._embedder_key: tuple | None = None
        self._failure: tuple[tuple, str, float] | None = None  # (key, reason, when)
        self._loading = False
        self._generation = 0  # moves on close(): a load that started before it is not kept
        self._reranker = None
        self._reranker_key: tuple | None = None
        self._users = 0

    # -- lifetime --------------------------------------------------------------------------
    def acquire(self) -> None:
        with self._lock:
            self._users += 1

    def release(self) -> None:
        with self._lock:
            self._users = max(0, self._users - 1)
            last = self._users == 0
        if last:
            self.close()

    def close(self) -> None:
        """Free every loaded model (the next use loads it again). A load still running keeps
        nothing: it sees the generation moved and closes what it made (no waiting for it here).
        A model in use by another thread is freed when its current call ends (its own lock)."""
        with self._lock:
            self._generation += 1
            embedder, reranker = self._embedder, self._reranker
            self._embedder = self._reranker = None
            self._embedder_key = self._reranker_key = None
        for model in (embedder, reranker):
            if model is not None and hasattr(model, "close"):
                model.close()

    def forget_failures(self) -> None:
        with self._lock:
            self._failure = None

    # -- the embedder ----------------------------------------------------------------------
    @staticmethod
    def _key(settings: Settings) -> tuple:
        return (str(settings.models.embedding_path or settings.models.dir or settings.data_dir),
                settings.models.threads)

    def embedder(self, settings: Settings, say: Say | None = None, wait: bool = True):
        """The embedder, loading it if needed. wait=False: None unless it is ready (a load starts
        in the background). Raises ModelUnavailableError, also for a remembered failure."""
        key = self._key(settings)
        with self._lock:
            if self._embedder is not None and self._embedder_key == key:
                return self._embedder
            if self._failure is not None and self._failure[0] == key:
                if self._clock() - self._failure[2] < settings.models.retry_after_s:
                    raise ModelUnavailableError(self._failure[1])
                self._failure = None  # cooled down: this use tries again
            if not wait:
                if not self._loading:
                    self._loading = True
                    threading.Thread(target=self._load_quietly, args=(settings, self._generation), daemon=True,
                                     name=LOADER_THREAD).start()
                return None
            generation = self._generation
        return self._load(settings, say or (lambda text: None), generation)

    def _load_quietly(self, settings: Settings, generation: int) -> None:
        """The background load (a search that would not wait); its result is only kept, not used."""
        try:
            embedder = self._load(settings, lambda text: None, generation)
        except ModelUnavailableError:
            return  # remembered as the failure; the next search shows it
        with self._lock:
            kept = embedder is self._embedder
        if not kept and hasattr(embedder, "close"):
            embedder.close()  # the holder closed while it loaded

    def _load(self, settings: Settings, say: Say, generation: int):
        """Load under the load lock. `generation`: the holder's when the load was asked for; if
        it closed since, the model is handed to the caller but not kept."""
        key = self._key(settings)
        with self._load_lock:
            with self._lock:
                if self._embedder is not None and self._embedder_key == key:
                    return self._embedder
                self._loading = True
            try:
                embedder = self._embedder_factory(settings, say)
            except ModelUnavailableError as exc:
                with self._lock:
                    self._failure, self._loading = (key, str(exc), self._clock()), False
                raise
            except Exception as exc:  # llama.cpp or a corrupt file: the user sees why, the process goes on
                message = f"cannot load the embedding model: {type(exc).__name__}: {exc}"
                with self._lock:
                    self._failure, self._loading = (key, message, self._clock()), False
                raise ModelUnavailableError(message) from exc
            with self._lock:
                self._loading = False
                if generation != self._generation:  # closed meanwhile: hand it to this caller only
                    return embedder
                old, self._embedder, self._embedder_key = self._embedder, embedder, key
                self._failure = None
        if old is not None and hasattr(old, "close"):
            old.close()
        return embedder

    # -- the reranker ----------------------------------------------------------------------
    def reranker(self, settings: Settings):
        """The configured reranker (it loads on its first use), or None when none is configured."""
        key = (str(settings.models.reranker_path), settings.models.reranker_threads)
        with self._lock:
            old = None
            if self._reranker_key != key:
                old = self._reranker
                self._reranker, self._reranker_key = self._reranker_factory(settings), key
            reranker = self._reranker
        if old is not None and hasattr(old, "close"):
            old.close()
        return reranker

    # -- what a status bar shows -----------------------------------------------------------
    def states(self, settings: Settings) -> list[ModelState]:
        key = self._key(settings)
        with self._lock:
            if self._embedder is not None and self._embedder_key == key:
                embedding = ModelState("embedding", READY)
            elif self._failure is not None and self._failure[0] == key:
                embedding = ModelState("embedding", UNAVAILABLE, self._failure[1])
            elif self._loading:
                embedding = ModelState("embedding", LOADING)
            else:
                embedding = ModelState("embedding", NOT_LOADED)
            path = reranker_path(settings)
            if path is None:
                rerank = ModelState("reranker", UNAVAILABLE, "not configured: set models.reranker_path")
            elif self._reranker is not None and getattr(self._reranker, "loaded", True):
                rerank = ModelState("reranker", READY)
            else:
                rerank = ModelState("reranker", NOT_LOADED, str(path))
        return [embedding, rerank]


_shared: ModelHolder | None = None
_shared_lock = threading.Lock()


def shared_holder() -> ModelHolder:
    """The process's holder (created on first use; nothing is loaded until a model is asked for)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = ModelHolder()
            # Free llama.cpp models before the interpreter tears its modules down (their
            # destructors fail noisily once ctypes is half gone).
            atexit.register(_shared.close)
        return _shared
