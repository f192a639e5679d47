"""Note vectors: one per note, the normalised mean of its chunk vectors (migration 0012).

A note's suggestions ask one KNN query of these instead of one per chunk. The embed sweep keeps
them current: a batch of new chunk vectors marks the notes that use those texts stale (in the
batch's transaction, so a killed sweep forgets nothing), an import marks a rewritten note stale
(trigger on `notes`), and `refresh_note_vectors` recomputes a stale note's vector only when the
content hashes of its embedded chunks differ from those it was computed from.
Only notes a model may read get a vector; an agent's connection sees only those of notes it may
see (store.visibility shadows `note_embeddings`, and every query here joins `notes`).
"""

from __future__ import annotations

import hashlib
import time
from typing import Iterable, Sequence

import apsw
import numpy as np

from mindtui.store import vector_codes
from mindtui.store import vectors as vector_store
from mindtui.store.batch import immediate
from mindtui.store.visibility import model_readable

PAGE = 500  # notes recomputed per transaction


def mark_stale_for_texts(conn: apsw.Connection, content_hashes: Sequence[str], model_id: str) -> set[str]:
    """The notes having a chunk of one of these texts need their vector again (new chunk
    vectors); returns them. A readable note with no vector row yet gets a stale one (no vector,
    `chunks` 0): the refresh takes stale notes first, so what a sweep embedded gets its vector
    before the walk over every note without one, in the same order however often the sweep was
    killed and run again."""
    if not content_hashes:
        return set()
    marks = ",".join("?" * len(content_hashes))
    notes = sorted({row[0] for row in conn.execute(
        f"SELECT DISTINCT note_id FROM chunks WHERE content_hash IN ({marks})", list(content_hashes))})
    if not notes:
        return set()
    marks = ",".join("?" * len(notes))
    conn.execute(f"UPDATE note_embeddings SET stale = 1 WHERE stale = 0 AND note_id IN ({marks})", notes)
    conn.execute(
        "INSERT INTO note_embeddings (note_id, model_id, source_key, chunks, stale)"
        f" SELECT n.note_id, ?, '', 0, 1 FROM notes n WHERE n.note_id IN ({marks}) AND {model_readable('n')}"
        " AND NOT EXISTS (SELECT 1 FROM note_embeddings ne WHERE ne.note_id = n.note_id) ORDER BY n.note_id",
        (model_id, *notes))
    return set(notes)


def _source_key(hashes: list[str]) -> str:
    return hashlib.sha256("\n".join(hashes).encode()).hexdigest()


def _work_page(conn: apsw.Connection, model_id: str, after: str) -> tuple[list[str], str]:
    """Notes whose vector is stale, then readable notes with none yet whose id sorts after `after`
    (each page goes on where the last one ended: scanning from the first note again and again
    made the first refresh of 190k notes quadratic). Returns the page and where the next begins."""
    stale = [row[0] for row in conn.execute(
        "SELECT note_id FROM note_embeddings WHERE stale = 1 OR model_id != ? LIMIT ?", (model_id, PAGE))]
    if len(stale) == PAGE:
        return stale, after
    missing = [row[0] for row in conn.execute(
        f"SELECT n.note_id FROM notes n WHERE n.note_id > ? AND {model_readable('n')} AND NOT EXISTS ("
        " SELECT 1 FROM note_embeddings ne WHERE ne.note_id = n.note_id) ORDER BY n.note_id LIMIT ?",
        (after, PAGE - len(stale)))]
    return stale + missing, missing[-1] if missing else after


def refresh_note_vectors(conn: apsw.Connection, model_id: str, until: float | None = None,
                         first: Iterable[str] = ()) -> dict[str, int]:
    """Bring every note vector up to date for `model_id`; returns what it did (counts). `until`:
    a time.monotonic() after which no further page is begun (the rest waits for the next run;
    `left` says whether some is left). `first`: notes brought up to date whatever `until` says
    (stale, so on the first pages): those whose texts a budgeted sweep just embedded
    (milliseconds a note, against about a second for its texts), so that what a night embedded
    gets suggestions that night, also when its last batch ran past the budget."""
    done = {"computed": 0, "kept": 0, "removed": 0}
    fitted = vector_codes.load_params(conn, vector_codes.NOTES)
    if fitted is not None and fitted.model_id != model_id:
        vector_codes.drop(conn, vector_codes.NOTES)  # fitted to another model's vectors: the nightly fits it again
    first = set(first)
    after = ""
    while True:
        page, after = _work_page(conn, model_id, after)
        if not page:
            break
        if until is not None and time.monotonic() > until:
            page = sorted(first)  # what is left of them (stale: on the first pages)
            for start in range(0, len(page), PAGE):
                with immediate(conn):
                    _refresh_page(conn, model_id, page[start:start + PAGE], done)
            done["left"] = 1
            break
        first.difference_update(page)
        with immediate(conn):  # it reads before it writes
            _refresh_page(conn, model_id, page, done)
    return done


def _refresh_page(conn: apsw.Connection, model_id: str, note_ids: list[str], done: dict[str, int]) -> None:
    marks = ",".join("?" * len(note_ids))
    readable = {row[0] for row in conn.execute(
        f"SELECT n.note_id FROM notes n WHERE n.note_id IN ({marks}) AND {model_readable('n')}", note_ids)}
    hashes: dict[str, list[str]] = {n: [] for n in readable}
    for note_id, content_hash in conn.execute(
            "SELECT c.note_id, c.content_hash FROM chunks c CROSS JOIN embeddings e ON e.content_hash = c.content_hash"
            f" AND e.model_id = ? WHERE c.note_id IN ({marks}) ORDER BY c.note_id, c.seq", (model_id, *note_ids)):
        if note_id in hashes:
            hashes[note_id].append(content_hash)
    stored = {note_id: (key, model, vector_id) for note_id, key, model, vector_id in conn.execute(
        f"SELECT note_id, source_key, model_id, note_vector_id FROM note_embeddings WHERE note_id IN ({marks})",
        note_ids)}
    gone = [n for n in note_ids if n not in readable and n in stored]
    if gone:
        conn.execute(f"DELETE FROM note_embeddings WHERE note_id IN ({','.join('?' * len(gone))})", gone)
        done["removed"] += len(gone)
    changed = []
    for note_id in sorted(readable):
        key = _source_key(hashes[note_id])
        if stored.get(note_id, ())[:2] == (key, model_id):
            done["kept"] += 1
        else:
            changed.append((note_id, key))
    conn.execute(f"UPDATE note_embeddings SET stale = 0 WHERE note_id IN ({marks})", note_ids)
    # The code index loses the old vectors and gains the new ones in this transaction (a kill: neither).
    vector_codes.remove(conn, [stored[n][2] for n in gone] + [stored[n][2] for n, _ in changed if n in stored],
                        vector_codes.NOTES)
    if not changed:
        return
    sums = _chunk_vector_sums(conn, model_id, [n for n, _ in changed])
    written_ids, written = [], []
    for note_id, key in changed:
        conn.execute("DELETE FROM note_embeddings WHERE note_id = ?", (note_id,))  # its vec_notes row by trigger
        conn.execute("INSERT INTO note_embeddings (note_id, model_id, source_key, chunks) VALUES (?, ?, ?, ?)",
                     (note_id, model_id, key, len(hashes[note_id])))
        if note_id in sums:
            total = sums[note_id]
            vector = (total / (float(np.linalg.norm(total)) or 1.0)).astype(np.float32)
            written_ids.append(conn.last_insert_rowid())
            written.append(vector)
            conn.execute("INSERT INTO vec_notes (rowid, embedding) VALUES (?, ?)", (written_ids[-1], vector.tobytes()))
        done["computed"] += 1
    if written:
        vector_codes.add(conn, written_ids, np.stack(written), vector_codes.NOTES)


# CROSS JOIN keeps chunks (found by note id) the outer loop: without statistics SQLite would scan
# every embedding of the model instead.
def _chunk_vector_sums(conn: apsw.Connection, model_id: str, note_ids: list[str]) -> dict[str, np.ndarray]:
    marks = ",".join("?" * len(note_ids))
    owners = conn.execute(
        "SELECT c.note_id, e.embedding_id FROM chunks c CROSS JOIN embeddings e ON e.content_hash = c.content_hash"
        f" AND e.model_id = ? WHERE c.note_id IN ({marks})", (model_id, *note_ids)).fetchall()
    vectors = vectors_by_rowid(conn, "vec_chunks", sorted({e for _, e in owners}))
    sums: dict[str, np.ndarray] = {}
    for note_id, embedding_id in owners:
        vector = vectors[embedding_id]
        sums[note_id] = sums[note_id] + vector if note_id in sums else vector.astype(np.float64)
    return sums


def vectors_by_rowid(conn: apsw.Connection, table: str, rowids: list[int], step: int = 500) -> dict[int, np.ndarray]:
    """rowid -> vector of a vec0 table (`vec_chunks` or `vec_notes`). Read by `rowid IN (...)`:
    sqlite-vec 0.1.9 joined on rowid reads each row far slower than a list of rowids at once."""
    if table not in ("vec_chunks", "vec_notes"):
        raise ValueError(f"not a vector table: {table}")
    out: dict[int, np.ndarray] = {}
    for start in range(0, len(rowids), step):
        part = rowids[start:start + step]
        out.update((rowid, np.frombuffer(blob, dtype=np.float32)) for rowid, blob in conn.execute(
            f"SELECT rowid, embedding FROM {table} WHERE rowid IN ({','.join('?' * len(part))})", part))
    return out


def stored_vectors(conn: apsw.Connection, rowids: list[int], space: vector_codes.VectorSpace = vector_codes.CHUNKS
                   ) -> dict[int, np.ndarray]:
    """rowid -> vector of the space: its float16 copies while its code index is built (one b-tree
    row each: a million-chunk vec0 reads each vector by walking a 1.5 MB blob), else the vec0 rows."""
    if vector_codes.load_params(conn, space) is not None:
        return vector_codes.float_vectors(conn, np.asarray(rowids, dtype=np.int64), space)
    return vectors_by_rowid(conn, space.vectors, rowids)


def note_vector(conn: apsw.Connection, note_id: str, model_id: str) -> np.ndarray | None:
    """The note's stored vector, or (stale or not yet written) its chunks' mean computed now;
    None for a note the reader may not see or a model may not read, or with no chunk vector."""
    row = conn.execute(
        "SELECT ne.note_vector_id FROM note_embeddings ne JOIN notes n ON n.note_id = ne.note_id"
        f" WHERE ne.note_id = ? AND ne.model_id = ? AND ne.stale = 0 AND ne.chunks > 0 AND {model_readable('n')}",
        (note_id, model_id)).fetchone()
    if row:
        return vectors_by_rowid(conn, "vec_notes", [row[0]])[row[0]]
    if conn.execute(f"SELECT 1 FROM notes n WHERE n.note_id = ? AND {model_readable('n')}", (note_id,)).fetchone() is None:
        return None
    total = _chunk_vector_sums(conn, model_id, [note_id]).get(note_id)
    if total is None:
        return None
    return (total / (float(np.linalg.norm(total)) or 1.0)).astype(np.float32)


_SEEN_NOTE = (
    "SELECT ne.note_id FROM note_embeddings ne JOIN notes n ON n.note_id = ne.note_id"
    f" WHERE ne.note_vector_id = ? AND ne.model_id = ? AND {model_readable('n')}")
_SEEN_VECTORS = (  # as store.vectors.knn_within's `allowed`: one column, embedding_id
    "SELECT ne.note_vector_id AS embedding_id FROM note_embeddings ne JOIN notes n ON n.note_id = ne.note_id"
    f" WHERE ne.model_id = ? AND {model_readable('n')}")


def nearest_notes(conn: apsw.Connection, query: np.ndarray, model_id: str, k: int) -> dict[str, float]:
    """Note id -> cosine of the `k` notes whose vectors are nearest `query`, among the notes the
    reader sees and a model may read: one KNN query (over the note vectors' code index above
    search.ann_min_vectors, store.vectors.knn); asked again over only those (twice as many each
    time) while notes the reader may not see take places among the first `k`."""
    k = max(1, int(k))
    hits = vector_store.knn_refilled(conn, query, k, lambda found: len(_note_hits(conn, found, model_id)) >= k,
                                     (_SEEN_VECTORS, (model_id,)), vector_codes.NOTES)
    return dict(list(_note_hits(conn, hits, model_id).items())[:k])


def _note_hits(conn: apsw.Connection, hits: list[vector_store.VectorHit], model_id: str) -> dict[str, float]:
    """Note id -> cosine of the hits the reader may use, nearest first."""
    out: dict[str, float] = {}
    for hit in hits:
        found = conn.execute(_SEEN_NOTE, (hit.embedding_id, model_id)).fetchone()
        if found:
            out[found[0]] = 1.0 - hit.distance
    return out


def vectors_of(conn: apsw.Connection, note_ids: list[str], model_id: str) -> dict[str, np.ndarray]:
    """The stored vectors of these notes (those the reader sees and a model may read)."""
    if not note_ids:
        return {}
    marks = ",".join("?" * len(note_ids))
    rowids = dict(conn.execute(
        "SELECT ne.note_id, ne.note_vector_id FROM note_embeddings ne JOIN notes n ON n.note_id = ne.note_id"
        f" WHERE ne.note_id IN ({marks}) AND ne.model_id = ? AND ne.chunks > 0 AND {model_readable('n')}",
        (*note_ids, model_id)))
    vectors = vectors_by_rowid(conn, "vec_notes", sorted(rowids.values()))
    return {note_id: vectors[rowid] for note_id, rowid in rowids.items() if rowid in vectors}


def stored_note_vectors(conn: apsw.Connection, model_id: str) -> dict[str, np.ndarray]:
    """Every readable note's stored vector (one scan of vec_notes)."""
    rowids = dict(conn.execute(
        "SELECT ne.note_vector_id, ne.note_id FROM note_embeddings ne JOIN notes n ON n.note_id = ne.note_id"
        f" WHERE ne.model_id = ? AND ne.chunks > 0 AND {model_readable('n')}", (model_id,)))
    return {rowids[rowid]: np.frombuffer(blob, dtype=np.float32)
            for rowid, blob in conn.execute("SELECT rowid, embedding FROM vec_notes") if rowid in rowids}
