"""The reranker mechanics, on a rank GGUF the test builds itself (e5 weights + a random head).

No reranker weights can be had from the package registries, so these tests prove the
plumbing (pair tokens, rank pooling, per-sequence scores), not ranking quality.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from mindtui.models.files import E5_FILE_NAME, ModelUnavailableError
from mindtui.models.reranker import Reranker

QUERY = "Wie funktioniert BM25?"
PASSAGES = [
    "BM25 ist eine Ranking-Funktion mit den Parametern k1 und b.",
    "Apfelkuchen backt man bei 180 Grad.",
    "Embeddings bilden Texte auf Vektoren ab.",
    "Der Zug ist zu spät.",
    "Reciprocal Rank Fusion addiert 1/(k+rank).",
]


@pytest.fixture(scope="module")
def reranker(rank_gguf):
    model = Reranker(rank_gguf, n_threads=2)
    yield model
    model.close()


def test_one_finite_score_per_pair(reranker):
    scores = reranker.score(QUERY, PASSAGES)
    assert len(scores) == len(PASSAGES) and all(np.isfinite(scores))
    assert len(set(round(s, 6) for s in scores)) == len(PASSAGES)  # the head really looks at the text
    assert reranker.score(QUERY, []) == []


@pytest.mark.parametrize("group_size", [1, 2, 3])
def test_scores_do_not_depend_on_batch_size_or_order(reranker, group_size):
    expected = reranker.score(QUERY, PASSAGES)
    backwards = PASSAGES[::-1]
    grouped = [s for i in range(0, len(backwards), group_size)
               for s in reranker.score(QUERY, backwards[i:i + group_size])]
    assert np.allclose(grouped[::-1], expected, atol=1e-5)


def test_long_passages_and_queries_are_truncated_safely(reranker):
    long_passage = "Wissensmanagement " * 3000
    scores = reranker.score("Frage " * 500, [long_passage, PASSAGES[0]])
    assert len(scores) == 2 and all(np.isfinite(scores))
    # the score of a passage is the same alone and beside a long one
    assert np.isclose(reranker.score(QUERY, [PASSAGES[0]])[0], reranker.score(QUERY, [long_passage, PASSAGES[0]])[1],
                      atol=1e-4)


def test_load_failures_are_reported_and_survivable(tmp_path, e5_models_dir):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + os.urandom(2048))
    with pytest.raises(ModelUnavailableError, match="cannot load the reranker model"):
        Reranker(broken, n_threads=1).score(QUERY, PASSAGES)
    with pytest.raises(ModelUnavailableError, match="does not exist"):
        Reranker(tmp_path / "absent.gguf", n_threads=1).score(QUERY, PASSAGES)
    # an embedding (mean pooling) model is not a reranker
    with pytest.raises(ModelUnavailableError, match="not a rank"):
        Reranker(e5_models_dir / E5_FILE_NAME, n_threads=1).score(QUERY, PASSAGES)
