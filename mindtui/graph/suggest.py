"""Link suggestions: notes that belong with a note but are not linked to it yet.

Two signals, fused by reciprocal rank: similar meaning (the best cosine between the notes'
chunks, among the notes nearest by note vector) and shared links (Adamic-Adar over the link
graph: two notes that link to, or are linked from, the same rarely-linked notes probably belong
together). `bench/link_eval.py`
measures each alone and fused on held-out links.
"""

from __future__ import annotations

import math

import apsw
import numpy as np

from mindtui.store import graph_store
from mindtui.store import note_vectors as note_vector_store

RRF_K = 60
# Chunks of each candidate compared with the note's: sqlite-vec reads a vector back by rowid at
# about 0.1 ms CPU, so 48 candidates x 16 chunks cost ~80 ms. On the hub (bench/suggest_eval.py,
# 150 notes) the first 4 keep the top 10 as close to the former per-chunk KNN as 16 do (overlap@10
# 0.67 against 0.69, link recall@10 0.020 both); 2 lose it (0.28).
CANDIDATE_CHUNKS = 4


def similar_notes(conn: apsw.Connection, note_id: str, model_id: str, k: int) -> dict[str, float]:
    """Other notes by the best cosine between any of their chunks and any of this note's chunks,
    among the `k` notes whose note vectors (mean chunk vectors, store.note_vectors) are nearest
    this note's: one vector query, then the candidates' first CANDIDATE_CHUNKS chunks compared
    in memory with this note's first 16 (the score, and so graph.suggest_min_cosine, means what
    it meant when each of this note's chunks asked a KNN)."""
    own = note_vector_store.note_vector(conn, note_id, model_id)
    if own is None:
        return {}
    candidates = [n for n in note_vector_store.nearest_notes(conn, own, model_id, k + 1) if n != note_id][:k]
    return best_cosines(conn, note_id, candidates, model_id, CANDIDATE_CHUNKS)


def best_cosines(conn: apsw.Connection, note_id: str, others: list[str], model_id: str,
                 their_chunks: int = 16) -> dict[str, float]:
    """Other note -> the best cosine between any of its first `their_chunks` chunks and any of
    this note's first 16."""
    vectors = graph_store.first_chunk_vectors(conn, [note_id], model_id)
    if note_id not in vectors:
        return {}
    vectors.update(graph_store.first_chunk_vectors(conn, [o for o in others if o != note_id], model_id, their_chunks))
    mine = np.frombuffer(b"".join(vectors[note_id]), dtype=np.float32).reshape(len(vectors[note_id]), -1)
    return {other: float(np.max(mine @ np.frombuffer(b"".join(vectors[other]), dtype=np.float32)
                                .reshape(len(vectors[other]), -1).T))
            for other in others if other in vectors}


def best_cosine(conn: apsw.Connection, first: str, second: str, model_id: str) -> float | None:
    """The best cosine between any chunk of one note and any chunk of the other (None without vectors)."""
    return best_cosines(conn, first, [second], model_id).get(second)


def shared_link_scores(conn: apsw.Connection, note_id: str) -> dict[str, float]:
    """Adamic-Adar: the sum over shared link neighbours z of 1 / log(degree z), links read both ways."""
    neighbours = graph_store.link_neighbours(conn, [note_id]).get(note_id, set())
    if not neighbours:
        return {}
    around = graph_store.link_neighbours(conn, sorted(neighbours))
    scores: dict[str, float] = {}
    for middle, others in around.items():
        weight = 1.0 / math.log(max(len(others), 2))
        for other in others:
            if other != note_id:
                scores[other] = scores.get(other, 0.0) + weight
    return scores


def fuse(rankings: list[dict[str, float]], exclude: set[str], limit: int) -> list[tuple[str, float]]:
    """Reciprocal rank fusion of score maps (higher is better), best first."""
    fused: dict[str, float] = {}
    for scores in rankings:
        ordered = sorted((n for n in scores if n not in exclude), key=lambda n: (-scores[n], n))
        for rank, note in enumerate(ordered, start=1):
            fused[note] = fused.get(note, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(fused.items(), key=lambda p: (-p[1], p[0]))[:limit]


def cascade(rankings: list[dict[str, float]], exclude: set[str], limit: int) -> list[tuple[str, float]]:
    """The first ranking's best, then the next ranking fills the remaining places, and so on.

    Scores come back as 1 / position so that later entries never outrank earlier ones.
    """
    picked: list[str] = []
    for scores in rankings:
        for note in sorted((n for n in scores if n not in exclude), key=lambda n: (-scores[n], n)):
            if len(picked) >= limit:
                break
            if note not in picked:
                picked.append(note)
    return [(note, round(1.0 / position, 6)) for position, note in enumerate(picked, start=1)]
