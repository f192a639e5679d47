"""Deterministic stand-ins for plumbing tests. Anything claiming search quality uses the real model."""

from __future__ import annotations

import hashlib

import numpy as np


class DeterministicFakeEmbedder:
    """Hash-seeded unit vectors: same text, same vector; counts what it was asked to embed."""

    def __init__(self, model_id: str = "fake-hash-embedder", dim: int = 384) -> None:
        self.model_id = model_id
        self.dim = dim
        self.calls: list[list[str]] = []

    def embed_passages(self, texts):
        self.calls.append(list(texts))
        return np.stack([self._vector("passage: " + t) for t in texts]) if texts else np.zeros((0, self.dim))

    def embed_query(self, text):
        return self._vector("query: " + text)

    def _vector(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
        vector = np.random.default_rng(seed).normal(size=self.dim).astype(np.float32)
        return vector / np.linalg.norm(vector)

    @property
    def embedded_texts(self) -> list[str]:
        return [t for call in self.calls for t in call]


class ModelsFromCallables:
    """Stands in for search.engine.SearchModels in plumbing tests: each model from a callable
    (which may raise, as a broken model does). No embedder: the search says none is configured."""

    def __init__(self, embedder=None, reranker=None) -> None:
        self._embedder, self._reranker = embedder, reranker

    def embedder(self, wait: bool):
        from mindtui.errors import ModelUnavailableError

        if self._embedder is None:
            raise ModelUnavailableError("no embedding model in this test")
        return self._embedder()

    def reranker(self):
        return self._reranker() if self._reranker is not None else None


class RecordingReranker:
    """Scores passages by length and remembers every passage it was shown."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def score(self, query, passages):
        self.seen.extend(passages)
        return [float(len(p)) for p in passages]


class KeywordEmbedder:
    """A fake embedder (deterministic, named so) whose vectors a test chooses: a passage gets the
    vector of the first keyword it contains, every query the same `query_vector`. Lets a test
    know each note's cosine to the query, and so the vector ranks, by construction."""

    def __init__(self, query_vector: np.ndarray, table: dict[str, np.ndarray], model_id: str = "fake-keyword") -> None:
        self.query_vector = query_vector / np.linalg.norm(query_vector)
        self.table = {k: v / np.linalg.norm(v) for k, v in table.items()}
        self.model_id = model_id
        self.dim = len(query_vector)

    def embed_passages(self, texts):
        rows = []
        for text in texts:
            vector = next((v for k, v in self.table.items() if k in text), None)
            rows.append(vector if vector is not None else _orthogonal(self.dim))
        return np.stack(rows) if rows else np.zeros((0, self.dim))

    def embed_query(self, text):
        return self.query_vector


def _orthogonal(dim: int) -> np.ndarray:
    vector = np.zeros(dim, dtype=np.float32)
    vector[-1] = 1.0
    return vector


def unit_at_cosine(cosine: float, dim: int = 384) -> np.ndarray:
    """A unit vector whose cosine with the first axis is `cosine` (the rest on the second axis)."""
    vector = np.zeros(dim, dtype=np.float32)
    vector[0], vector[1] = cosine, (1 - cosine * cosine) ** 0.5
    return vector
