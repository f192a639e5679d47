"""The close note pairs behind the link suggestion cards, kept up to date incrementally.

A note's close notes are its `neighbours` nearest by note vector at a cosine of at least the
floor: one vector query (store.note_vectors.nearest_notes: the note vectors' code index at
scale). A refresh looks up again only the notes whose note vector was written or removed since
the last one (logged in the transaction that writes the vector, migration 0015) and their
neighbours: the notes that named the old vector among their close notes, and those the new one
comes closer to than their farthest close note (found among its REACH x `neighbours` nearest).
An unchanged vault asks no query. A killed refresh goes on where it stopped: a note leaves the
log in the transaction that writes its rows, and its neighbours enter it in the same one.

Many notes due at once (the first refresh, a new model, another floor) are looked up together
instead: every note vector read once and each page's cosines with all of them one matrix product
(exact; at 191k notes ~5 minutes against ~45 for one query each).
"""

from __future__ import annotations

import json
from typing import Callable

import apsw
import numpy as np

from mindtui.store import close_pairs
from mindtui.store import note_vectors as note_vector_store
from mindtui.store.batch import immediate

PAGE = 200  # notes looked up per transaction, the matrix way (a page's product takes ~0.1 s)
QUERY_PAGE = 40  # one query a note, ~15 ms each at 1M chunks: the write lock is held ~0.6 s, not 3 s
REACH = 4  # a changed note asks for this many times `neighbours` notes: those whose lists it may enter
BULK = 2000  # from this many notes due, the matrix way

Lookup = Callable[[dict, list], dict]  # (vectors, [(note, how many)]) -> note -> {other: cosine}, nearest first


def refresh_close_pairs(conn: apsw.Connection, model_id: str, floor: float, neighbours: int) -> dict[str, int]:
    """Bring the close pairs up to date; returns how many notes were looked up (`changed`: their
    vector changed; `neighbours`: a neighbour of one)."""
    wanted = json.dumps({"model": model_id, "floor": floor, "neighbours": neighbours}, sort_keys=True)
    report = {"changed": 0, "neighbours": 0}
    if close_pairs.settings(conn) != wanted:
        with immediate(conn):
            close_pairs.start_over(conn, wanted)
        report["started_over"] = 1
    looked_up: set[str] = set()  # this run's lookups saw every changed vector already
    bulk = close_pairs.due_count(conn) >= BULK
    lookup = _matrix_lookup(conn, model_id) if bulk else _query_lookup(conn, model_id)
    while True:
        with immediate(conn):  # it reads before it writes (the TUI's own writes wait for it meanwhile)
            page = close_pairs.due_page(conn, PAGE if bulk else QUERY_PAGE)
            if not page:
                break
            ids = [n for n, _ in page]
            spreading = {n for n, spread in page if spread}
            vectors = note_vector_store.vectors_of(conn, ids, model_id)
            held = close_pairs.holders(conn, sorted(spreading))
            found: dict[str, dict[str, float]] = {}
            reached: dict[str, float] = {}
            asked = [n for n in ids if n in vectors]
            nearest = lookup(vectors, [(n, neighbours * (REACH if n in spreading else 1) + 1) for n in asked])
            for note_id in asked:
                wide = note_id in spreading
                close = [(other, cosine) for other, cosine in nearest[note_id].items()
                         if other != note_id and cosine >= floor]
                found[note_id] = dict(close[:neighbours])
                if wide:
                    for other, cosine in close:
                        reached[other] = max(cosine, reached.get(other, cosine))
            radius = close_pairs.radii(conn, sorted(reached), neighbours)
            entered = {other for other, cosine in reached.items() if cosine >= radius.get(other, floor)}
            close_pairs.write(conn, found, [n for n in ids if n not in vectors])
            looked_up.update(ids)
            close_pairs.mark_due(conn, sorted((held | entered) - looked_up))
        report["changed"] += len(spreading)
        report["neighbours"] += len(ids) - len(spreading)
    return report


def _query_lookup(conn: apsw.Connection, model_id: str) -> Lookup:
    """One vector query a note (over the note vectors' code index at scale)."""
    def lookup(vectors: dict, wanted: list) -> dict:
        return {n: note_vector_store.nearest_notes(conn, vectors[n], model_id, k) for n, k in wanted}
    return lookup


def _matrix_lookup(conn: apsw.Connection, model_id: str) -> Lookup:
    """Every note vector read once; a page's cosines with all of them in one product."""
    every = note_vector_store.stored_note_vectors(conn, model_id)
    ids = sorted(every)
    matrix = np.stack([every[n] for n in ids]) if ids else np.zeros((0, 0), dtype=np.float32)
    del every

    def lookup(vectors: dict, wanted: list) -> dict:
        if not wanted or not ids:
            return {n: {} for n, _ in wanted}
        scores = np.stack([vectors[n] for n, _ in wanted]) @ matrix.T
        out = {}
        for row, (note_id, k) in enumerate(wanted):
            k = min(k, len(ids))
            best = np.argpartition(-scores[row], k - 1)[:k]
            best = best[np.argsort(-scores[row][best], kind="stable")]
            out[note_id] = {ids[i]: float(scores[row][i]) for i in best}
        return out
    return lookup
