"""The embedding sweep: embed exactly the chunk texts that lack a vector for the current model.

Batches are committed one by one, so a killed sweep loses at most one batch and the next
run continues where it stopped. Identical texts are embedded once (vectors are keyed by
content hash). A different model id than last time removes the old vectors and re-embeds
everything, with a notice.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import apsw

from mindtui.models.embedder import Embedder
from mindtui.store import vectors as vector_store
from mindtui.store.meta import EMBEDDING_MODEL_KEY, get_meta, set_meta
from mindtui.store.notes import passage_text

MODEL_KEY = EMBEDDING_MODEL_KEY
Progress = Callable[[int, int, str], None]


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


def run_embed_sweep(conn: apsw.Connection, embedder: Embedder, *, batch_size: int = 16,
                    progress: Progress | None = None) -> EmbedReport:
    started = time.monotonic()
    progress = progress or (lambda done, total, detail: None)
    model_id = embedder.model_id
    report = EmbedReport(model=model_id)

    previous = get_meta(conn, MODEL_KEY)
    others = {m: n for m, n in vector_store.models_with_vectors(conn).items() if m != model_id}
    if others:
        old = ", ".join(sorted(others))
        report.notices.append(
            f"embedding model changed ({old} -> {model_id}): {sum(others.values())} old vectors removed,"
            " every chunk is embedded again"
        )
    with conn:
        report.removed += vector_store.delete_other_models(conn, model_id)
        report.removed += vector_store.delete_orphans(conn, model_id)
        if previous != model_id:
            set_meta(conn, MODEL_KEY, model_id)

    pending = vector_store.pending_texts(conn, model_id)
    coverage = vector_store.chunk_coverage(conn, model_id)
    report.excluded = coverage["chunks_ai_excluded"]
    report.skipped = coverage["chunks_with_vector"]
    report.duplicates = sum(p.chunks - 1 for p in pending)
    total = len(pending)
    progress(0, total, "")
    for start in range(0, total, batch_size):
        batch = pending[start:start + batch_size]
        vectors = embedder.embed_passages([passage_text(p.title, p.heading_path, p.text) for p in batch])
        if vectors.shape[1] != vector_store.VECTOR_DIM:
            raise ValueError(f"model {model_id} makes {vectors.shape[1]}-d vectors; the store holds "
                             f"{vector_store.VECTOR_DIM}-d vectors")
        with conn:  # one transaction per batch: a kill loses at most this batch
            vector_store.insert_vectors(conn, model_id, [p.content_hash for p in batch], vectors)
        report.embedded += len(batch)
        progress(report.embedded, total, batch[-1].title)
    report.seconds = time.monotonic() - started
    return report
