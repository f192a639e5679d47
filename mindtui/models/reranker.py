"""Score (query, passage) pairs with a llama.cpp rank model (a cross-encoder such as bge-reranker-v2-m3).

llama-cpp-python has no rerank call and its embed() misreads rank output, so the pair
tokens are built here the way llama.cpp's server does it for XLM-R style rerankers
(`<s> query </s> </s> passage </s>`) and the score is read with
llama_get_embeddings_seq(ctx, 0)[0].

Each pair is decoded alone. Packing several pairs as sequences of one batch was measured to
shift scores by up to 2% depending on which pairs share the batch (llama.cpp 0.3.36,
BERT-style rank model), which would make a result depend on its neighbours; decoding one
pair at a time costs little for encoder models and makes every score independent of batch
size and order.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Sequence

from mindtui.models.files import ModelUnavailableError, load_llama

CONTEXT_TOKENS = 512
MAX_QUERY_TOKENS = 96  # long queries are cut so the passage keeps most of the window


class Reranker:
    def __init__(self, model_path: Path, n_threads: int) -> None:
        self.model_path = Path(model_path)
        self.n_threads = n_threads
        self._llm = None
        self._failure: str | None = None
        self._lock = threading.Lock()

    def _load(self):
        import llama_cpp

        llm = load_llama(self.model_path, "reranker", pooling_type=llama_cpp.LLAMA_POOLING_TYPE_RANK,
                         n_threads=self.n_threads, n_threads_batch=self.n_threads)
        # llama.cpp applies the pooling we ask for; the file's own pooling type tells whether
        # it has a classification head at all.
        arch = llm.metadata.get("general.architecture", "")
        declared = llm.metadata.get(f"{arch}.pooling_type")
        if declared is not None and int(declared) != llama_cpp.LLAMA_POOLING_TYPE_RANK:
            llm.close()
            raise ModelUnavailableError(
                f"{self.model_path} is not a rank (reranker) model (its pooling type is {declared})")
        vocab = llama_cpp.llama_model_get_vocab(llm.model)
        self._bos = llama_cpp.llama_vocab_bos(vocab)
        self._eos = llama_cpp.llama_vocab_eos(vocab)
        sep = llama_cpp.llama_vocab_sep(vocab)
        self._sep = sep if sep >= 0 else self._eos
        return llm

    @property
    def loaded(self) -> bool:
        return self._llm is not None

    def _model(self):
        """The loaded model; call with the lock held. A failed load is remembered: a broken file
        costs one attempt, not one per search."""
        if self._failure is not None:
            raise ModelUnavailableError(self._failure)
        if self._llm is None:
            try:
                self._llm = self._load()
            except ModelUnavailableError as exc:
                self._failure = str(exc)
                raise
        return self._llm

    def _tokens(self, text: str) -> list[int]:
        return self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)

    def _pair(self, query: list[int], passage: list[int]) -> list[int]:
        room = CONTEXT_TOKENS - len(query) - 4  # <s> q </s> </s> p </s>
        return [self._bos, *query, self._eos, self._sep, *passage[:room], self._eos]

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """One relevance score per passage (higher is better). Raises ModelUnavailableError."""
        import llama_cpp

        if not passages:
            return []
        with self._lock:
            llm = self._model()
            query_tokens = self._tokens(query)[:MAX_QUERY_TOKENS]
            pairs = [self._pair(query_tokens, self._tokens(p)) for p in passages]
            scores: list[float] = []
            for tokens in pairs:
                llm._batch.reset()  # pinned llama-cpp-python 0.3.36: its batch and context wrappers
                llm._batch.add_sequence(tokens, 0, logits_all=True)
                llm._ctx.kv_cache_clear()
                llm._ctx.decode(llm._batch)
                scores.append(float(llama_cpp.llama_get_embeddings_seq(llm._ctx.ctx, 0)[0]))
            return scores

    def close(self) -> None:
        with self._lock:
            self._failure = f"the reranker {self.model_path.name} was closed"
            if self._llm is not None:
                self._llm.close()
                self._llm = None
