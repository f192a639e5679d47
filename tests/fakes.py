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
