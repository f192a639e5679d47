"""Sentence embeddings with llama.cpp: e5 prefixes, L2-normalised vectors, inputs capped at 512 tokens.

llama_cpp is imported when the model is first used, never at module import, so the headless
core and the TUI start without it. One Embedder serves every thread of a process (see
models.holder): each call holds the embedder's lock for the whole llama.cpp call, so a
context is never used by two threads at once nor freed under a running call. After
`close()` the embedder refuses work instead of quietly loading the model again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path
from typing import Sequence

import numpy as np

from mindtui.errors import ModelUnavailableError
from mindtui.models.files import load_llama

QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "
QUERY_CACHE = 256  # recent query vectors kept: a search repeated (eval's systems, a TUI refresh) embeds once
# A query is a few tokens: one thread embeds it in 7.7 ms median against 11.1 ms on two (load 7
# on 2 cores), and cannot stall. Two threads that wait for each other stalled whole runs of
# queries for 1.2 s each while another process held a core (the hybrid p95 of 1.2 s at 10k notes
# in bench/scale_bench.py --quick). Passages, in batches, keep models.threads.
QUERY_THREADS = 1


class Embedder:
    def __init__(self, model_path: Path, model_id: str, n_threads: int) -> None:
        self.model_path = Path(model_path)
        self.model_id = model_id
        self.n_threads = n_threads
        self._llm = None
        self._closed = False
        self._lock = threading.Lock()
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()

    def _model(self):
        """The loaded model; call with the lock held."""
        if self._closed:
            raise ModelUnavailableError(f"the embedding model {self.model_path.name} was closed")
        if self._llm is None:
            self._llm = self._load()
        return self._llm

    def _load(self):
        llm = load_llama(self.model_path, "embedding", n_threads=self.n_threads, n_threads_batch=self.n_threads,
                         flash_attn=True,
                         hint=" (a corrupt file? `mindtui models status` checks it, `mindtui models build` rebuilds it)")
        if llm.n_embd() <= 0:
            llm.close()
            raise ModelUnavailableError(f"{self.model_path} is not an embedding model")
        return llm

    @property
    def loaded(self) -> bool:
        return self._llm is not None

    @property
    def dim(self) -> int:
        with self._lock:
            return int(self._model().n_embd())

    def _embed(self, texts: Sequence[str], threads: int | None = None) -> np.ndarray:
        with self._lock:
            llm = self._model()
            if threads is not None:
                _set_threads(llm, threads)
            try:
                # One text per decode: llama.cpp packs a list into one batch, and its matrix kernels
                # round differently with the batch's size, so a vector would move (up to 2e-3 with
                # the sample vault's chunks) with the texts embedded beside it: a hidden note's
                # chunks in a batch would change a visible note's vector, hence an agent's scores.
                # No slower (a 512-token batch holds one or two chunks anyway): 96 of the sample
                # vault's chunks took 11.5 CPU s alone, 12.6 in batches (one thread).
                vectors = [llm.embed([text], normalize=False, truncate=True)[0] for text in texts]
            finally:
                if threads is not None:
                    _set_threads(llm, self.n_threads)
        matrix = np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms == 0, 1.0, norms)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed([PASSAGE_PREFIX + t for t in texts]) if texts else np.zeros((0, 0), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        with self._lock:
            cached = self._queries.get(text)
            if cached is not None:
                self._queries.move_to_end(text)
                return cached
        vector = self._embed([QUERY_PREFIX + text], threads=min(QUERY_THREADS, self.n_threads))[0]
        vector.setflags(write=False)  # shared by every caller of the same query
        with self._lock:
            self._queries[text] = vector
            while len(self._queries) > QUERY_CACHE:
                self._queries.popitem(last=False)
        return vector

    def forget_queries(self) -> None:
        """Drop the cached query vectors (a latency benchmark measures the embedding too)."""
        with self._lock:
            self._queries.clear()

    def count_tokens(self, text: str) -> int:
        """Model tokens of `text` including <s> and </s>."""
        with self._lock:
            return len(self._model().tokenize(text.encode("utf-8"), add_bos=True, special=False))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._llm is not None:
                self._llm.close()
                self._llm = None


def _set_threads(llm, threads: int) -> None:
    """The threads of the model's next decodes (llama.cpp reads them per call)."""
    import llama_cpp

    llama_cpp.llama_set_n_threads(llm.ctx, threads, threads)
