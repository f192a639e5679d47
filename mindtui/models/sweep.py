"""The embedding sweep: embed exactly the chunk texts that lack a vector for the current model.

Batches are committed one by one, so a killed sweep loses at most one batch and the next
run continues where it stopped. Identical texts are embedded once (vectors are keyed by
content hash). A different model than last time is first tried on one batch: only when its
vectors fit the store are the old vectors removed (in the same transaction that stores the
new batch), so a model that cannot be used leaves the index as it was.
Notes with `ai_processing: none` are never handed to the model (`pending_texts` skips them).
Current knowledge items are embedded too (title and body, keyed the same way), except those
stated in such a note.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import apsw

from mindtui.errors import ModelUnavailableError
from mindtui.progress import NEVER_CANCELLED, CancelToken, Progress, no_progress
from mindtui.store import vectors as vector_store
from mindtui.store.meta import EMBEDDING_MODEL_KEY, get_meta, set_meta
from mindtui.text.names import passage_text



class DimensionMismatch(ModelUnavailableError):
    """The model's vectors do not fit the store's vector table."""


@dataclass
class EmbedReport:
    model: str
    embedded: int = 0  # texts embedded in this run
    skipped: int = 0  # chunks that already had a vector
    duplicates: int = 0  # chunks that share their text with another (embedded once)
    excluded: int = 0  # chunks of notes with `ai_processing: none`
    removed: int = 0  # vectors dropped (text gone, or from an older model)
    seconds: float = 0.0
    notices: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {**self.__dict__, "seconds": round(self.seconds, 3)}


def _embed(embedder, model_id: str, batch: list[vector_store.PendingText]):
    vectors = embedder.embed_passages([passage_text(p.title, p.heading_path, p.text) for p in batch])
    if vectors.shape[1] != vector_store.VECTOR_DIM:
        raise DimensionMismatch(
            f"model {model_id} makes {vectors.shape[1]}-d vectors; this store holds {vector_store.VECTOR_DIM}-d "
            "vectors. Nothing was changed: the old vectors stay. Use a 384-d model (models.embedding_path)")
    return vectors


def run_embed_sweep(conn: apsw.Connection, embedder, *, batch_size: int, progress: Progress | None = None,
                    cancel: CancelToken | None = None) -> EmbedReport:
    """`embedder`: anything with `model_id` and `embed_passages(texts) -> (n, dim) array`."""
    started = time.monotonic()
    progress = progress or no_progress
    cancel = cancel or NEVER_CANCELLED
    model_id = embedder.model_id
    report = EmbedReport(model=model_id)

    pending = vector_store.pending_texts(conn, model_id)
    coverage = vector_store.chunk_coverage(conn, model_id)
    report.excluded = coverage["chunks_ai_excluded"]
    report.skipped = coverage["chunks_with_vector"]
    report.duplicates = sum(p.chunks - 1 for p in pending)
    total = len(pending)
    progress(0, total, "")
    first = pending[:batch_size]
    first_vectors = _embed(embedder, model_id, first) if first else None  # the new model proves itself here

    others = {m: n for m, n in vector_store.models_with_vectors(conn).items() if m != model_id}
    with conn:  # old vectors out, first batch in: one transaction
        report.removed += vector_store.delete_other_models(conn, model_id)
        report.removed += vector_store.delete_orphans(conn, model_id)
        if get_meta(conn, EMBEDDING_MODEL_KEY) != model_id:
            set_meta(conn, EMBEDDING_MODEL_KEY, model_id)
        if first:
            vector_store.insert_vectors(conn, model_id, [p.content_hash for p in first], first_vectors)
    if others:
        report.notices.append(
            f"embedding model changed ({', '.join(sorted(others))} -> {model_id}): {sum(others.values())} old "
            "vectors removed, every chunk is embedded again")
    report.embedded = len(first)
    if first:
        progress(report.embedded, total, first[-1].title)
    for start in range(batch_size, total, batch_size):
        cancel.check()
        batch = pending[start:start + batch_size]
        vectors = _embed(embedder, model_id, batch)
        with conn:  # one transaction per batch: a kill loses at most this batch
            vector_store.insert_vectors(conn, model_id, [p.content_hash for p in batch], vectors)
        report.embedded += len(batch)
        progress(report.embedded, total, batch[-1].title)
    report.seconds = time.monotonic() - started
    return report
