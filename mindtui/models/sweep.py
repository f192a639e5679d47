"""The embedding sweep: embed exactly the chunk texts that lack a vector for the current model.

Batches are committed one by one, so a killed sweep loses at most one batch and the next
run continues where it stopped. Identical texts are embedded once (vectors are keyed by
content hash). A different model than last time is first tried on one batch: only when its
vectors fit the store are the old vectors removed (in the same transaction that stores the
new batch), so a model that cannot be used leaves the index as it was.
Notes with `ai_processing: none` are never handed to the model (the pending queries skip them).
The work is read a page at a time (bounded memory at a million chunks), the most recently edited
notes first, and a budget in seconds stops the sweep cleanly between batches.
Each note's vector (the mean of its chunk vectors, store.note_vectors) follows its chunks'.
Current knowledge items are embedded too (title and body, keyed the same way), except those
stated in such a note.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import apsw

from mindtui.errors import Cancelled, ModelUnavailableError
from mindtui.progress import NEVER_CANCELLED, CancelToken, Progress, no_progress
from mindtui.store import note_vectors as note_vector_store
from mindtui.store import vectors as vector_store
from mindtui.store.batch import immediate
from mindtui.store.meta import EMBED_REMAINING_KEY, EMBEDDING_MODEL_KEY, get_meta, set_meta
from mindtui.text.names import passage_text

# Pending texts read per query: enough that the query's cost (a scan of the chunks) is small
# against the time embedding them takes, few enough to bound the memory.
PAGE_SIZE = 1024
# With a budget, the first batch's size: enough texts to time one, few enough that a slow
# machine (1.5 s a text on two busy cores) does not spend the budget on it.
PACE_PROBE = 4
# With a budget, the share of it the chunk texts leave for the note vectors of what they embedded
# (a note vector costs milliseconds, a note's texts about a second): a sweep that spent the whole
# budget on texts wrote no note vectors, and a first embedding spanning several nights gave no
# link suggestions night after night.
NOTE_VECTOR_SHARE = 0.05


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
    stopped_by_budget: bool = False
    remaining: int = 0  # texts left for the next run (when the budget stopped this one)
    eta_s: float | None = None  # how long they would take at this run's rate
    note_vectors: dict = field(default_factory=dict)  # note vectors computed / kept / removed
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
                    cancel: CancelToken | None = None, budget_s: float = 0.0,
                    page_size: int = PAGE_SIZE) -> EmbedReport:
    """`embedder`: anything with `model_id` and `embed_passages(texts) -> (n, dim) array`.
    `budget_s` > 0: stop before a batch that would likely end past the budget (the report says
    what remains and how long it would take at this run's rate)."""
    started = time.monotonic()
    progress = progress or no_progress
    cancel = cancel or NEVER_CANCELLED
    model_id = embedder.model_id
    report = EmbedReport(model=model_id)

    coverage = vector_store.chunk_coverage(conn, model_id)
    report.excluded = coverage["chunks_ai_excluded"]
    report.skipped = coverage["chunks_with_vector"]
    total = vector_store.pending_count(conn, model_id)
    progress(0, total, "")
    # Knowledge items first (few, and each one a statement the owner relies on), then chunk
    # texts page by page, the most recently edited notes first: what a person works on now is
    # what they search for while a large first embedding spans several nights.
    pages = _TimedPages(vector_store.pending_chunk_pages(conn, model_id, page_size))
    first_page = vector_store.pending_items(conn, model_id)
    if len(first_page) < batch_size:
        first_page += next(pages, [])
    # With a budget the first batch is small: it measures how long a text takes on this machine
    # today, and every later batch is cut to what fits in the time left.
    pace = _Pace(started, budget_s * (1 - NOTE_VECTOR_SHARE))
    first = first_page[:min(batch_size, PACE_PROBE) if budget_s else batch_size]
    first_vectors = pace.embed(embedder, model_id, first) if first else None  # the new model proves itself here

    others = {m: n for m, n in vector_store.models_with_vectors(conn).items() if m != model_id}
    with immediate(conn):  # old vectors out, first batch in: one transaction (it reads before it writes)
        report.removed += vector_store.delete_other_models(conn, model_id)
        report.removed += vector_store.delete_orphans(conn, model_id)
        if get_meta(conn, EMBEDDING_MODEL_KEY) != model_id:
            set_meta(conn, EMBEDDING_MODEL_KEY, model_id)
        embedded_notes = _insert(conn, model_id, first, first_vectors) if first else set()
    if others:
        report.notices.append(
            f"embedding model changed ({', '.join(sorted(others))} -> {model_id}): {sum(others.values())} old "
            "vectors removed, every chunk is embedded again")
    _stored(report, first)
    if first:
        progress(report.embedded, total, first[-1].title)
    page = first_page[len(first):]
    try:
        while True:
            if not page:
                # Reading the next page costs time too (about what the last one took).
                if not pace.texts_that_fit(1, pages.last_s):
                    report.stopped_by_budget = True
                    break
                page = next(pages, None)
                if page is None:
                    break
            fits = pace.texts_that_fit(batch_size)
            if not fits:
                report.stopped_by_budget = True
                break
            batch, page = page[:fits], page[fits:]
            cancel.check()
            vectors = pace.embed(embedder, model_id, batch)
            with conn:  # one transaction per batch: a kill loses at most this batch
                embedded_notes |= _insert(conn, model_id, batch, vectors)
            _stored(report, batch)
            progress(report.embedded, total, batch[-1].title)
    except Cancelled:
        # Searches say how many passages wait: what is left now, not what the last run left.
        with conn:
            set_meta(conn, EMBED_REMAINING_KEY, str(max(0, total - report.embedded)))
        raise
    # Note vectors follow the chunk vectors (also after a budget stop: what is embedded is found,
    # and its notes get suggestions; the chunks leave them NOTE_VECTOR_SHARE of the budget).
    report.note_vectors = note_vector_store.refresh_note_vectors(
        conn, model_id, until=started + budget_s if budget_s else None, first=embedded_notes)
    # What remains is estimated from the count at the start (counting again would scan every
    # chunk once more, seconds past the budget at a million chunks).
    report.remaining = max(0, total - report.embedded) if report.stopped_by_budget else 0
    report.seconds = time.monotonic() - started
    with conn:
        set_meta(conn, EMBED_REMAINING_KEY, str(report.remaining))
    if report.remaining:
        rate = report.embedded / report.seconds if report.seconds > 0 else 0.0
        report.eta_s = round(report.remaining / rate) if rate > 0 else None
        report.notices.append(
            f"embedding stopped at its budget of {budget_s:g} s: {report.remaining} texts remain"
            + (f" (about {_duration(report.eta_s)} at this run's rate)" if report.eta_s else "")
            + "; the next run continues, most recently edited notes first")
    return report


def _insert(conn: apsw.Connection, model_id: str, batch: list[vector_store.PendingText], vectors) -> set[str]:
    """One batch's vectors, and the notes using those texts marked for a new note vector (same
    transaction); returns those notes."""
    hashes = [p.content_hash for p in batch]
    vector_store.insert_vectors(conn, model_id, hashes, vectors)
    return note_vector_store.mark_stale_for_texts(conn, hashes, model_id)


def _stored(report: EmbedReport, batch: list[vector_store.PendingText]) -> None:
    report.embedded += len(batch)
    report.duplicates += sum(p.chunks - 1 for p in batch)


class _Pace:
    """How long this run takes to embed a text, and how many fit in what is left of the budget."""

    def __init__(self, started: float, budget_s: float) -> None:
        self.started, self.budget_s = started, budget_s
        self.texts, self.seconds = 0, 0.0

    def embed(self, embedder, model_id: str, batch: list[vector_store.PendingText]):
        begun = time.monotonic()
        vectors = _embed(embedder, model_id, batch)
        self.texts, self.seconds = self.texts + len(batch), self.seconds + time.monotonic() - begun
        return vectors

    def texts_that_fit(self, wanted: int, extra_s: float = 0.0) -> int:
        """Up to `wanted` texts that would end within the budget after `extra_s` of other work
        (all of them without a budget; 0: stop)."""
        if not self.budget_s:
            return wanted
        left = self.budget_s - (time.monotonic() - self.started) - extra_s
        if left <= 0:
            return 0
        if not self.texts or self.seconds <= 0:
            return wanted
        return max(0, min(wanted, int(left / (self.seconds / self.texts))))


class _TimedPages:
    """An iterator that remembers how long its last step took."""

    def __init__(self, iterator):
        self._iterator, self.last_s = iterator, 0.0

    def __iter__(self):
        return self

    def __next__(self):
        begun = time.monotonic()
        try:
            return next(self._iterator)
        finally:
            self.last_s = time.monotonic() - begun


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
