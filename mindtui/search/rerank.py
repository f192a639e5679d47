"""Reranking the fused head with a cross-encoder, when one is configured (explicit searches only)."""

from __future__ import annotations

import apsw

from mindtui.errors import ModelUnavailableError
from mindtui.store import search_store as store
from mindtui.text.names import passage_text


def rerank(conn: apsw.Connection, models, top: int, query: str, order: list[str], best_chunk: dict,
           facts: dict, explain: dict, notices: list[str]) -> list[str]:
    """The reranker reorders the head. A note with `ai_processing: none` is never shown to it:
    it keeps its fused place and the others are reordered around it."""
    if models is None or not order:
        return order
    try:
        reranker = models.reranker()
    except ModelUnavailableError as exc:
        notices.append(f"reranker unavailable ({exc}); fused order kept")
        return order
    if reranker is None:
        return order
    head = order[:top]
    allowed = [n for n in head if facts[n].ai_processing]
    if not allowed:
        return order
    texts = store.chunk_texts(conn, [best_chunk[n] for n in allowed if best_chunk.get(n)])
    passages = [passage_text(facts[n].title, *texts.get(best_chunk.get(n), ("", ""))) for n in allowed]
    try:
        rerank_scores = reranker.score(query, passages)
    except Exception as exc:  # reranking is an improvement, never a requirement
        notices.append(f"reranker failed ({exc}); fused order kept")
        return order
    by_score = sorted(zip(allowed, rerank_scores), key=lambda pair: -pair[1])
    for rank, (note_id, value) in enumerate(by_score, start=1):
        explain.setdefault(note_id, {})["rerank"] = {"rank": rank, "score": round(value, 4)}
    reordered = iter(note_id for note_id, _ in by_score)
    slots = set(allowed)
    return [next(reordered) if n in slots else n for n in head] + order[len(head):]
