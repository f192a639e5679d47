"""Link suggestions by note vector (one KNN query) against the former one KNN query per chunk.

    .venv/bin/python bench/suggest_eval.py /tmp/hub-copy.db [--notes 300] [--seed 5]

DB: a COPY of an embedded mindtui database (the script migrates it and writes its note vectors).
For a sample of notes that link to other notes, both methods rank the other notes by the best
cosine between the notes' chunks (the former: the k nearest chunks of each of the note's first
16 chunks; the current: the k notes nearest by note vector, their chunks compared in memory):
- overlap@10: the share of the former top 10 that the current top 10 keeps;
- link recall@10: the share of the note's linked notes (either way) in its top 10 (no note's
  links are left out: this asks how well meaning alone finds what the owner linked);
- milliseconds per note of each.
--index: the current way over the code indexes (the chunks' and the note vectors', built here and
used whatever their size, as above search.ann_min_vectors); the former way scans exactly.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mindtui.config import load_settings  # noqa: E402
from mindtui.graph.suggest import similar_notes  # noqa: E402
from mindtui.store import ann, graph_store, open_database, vector_codes  # noqa: E402
from mindtui.store import note_vectors as note_vector_store  # noqa: E402
from mindtui.store import vectors as vector_store  # noqa: E402
from mindtui.store.meta import EMBEDDING_MODEL_KEY, get_meta  # noqa: E402

TOP = 10
K = 48  # what neighbours.suggestions asks for at graph.suggestions = 10


def per_chunk_similar(conn, note_id: str, model_id: str, k: int) -> dict[str, float]:
    """The former similar_notes: one KNN query per chunk (up to 16)."""
    best: dict[str, float] = {}
    for blob in graph_store.note_vectors(conn, note_id, model_id):
        hits = vector_store.knn_refilled(
            conn, np.frombuffer(blob, dtype=np.float32), k,
            lambda hits: graph_store.chunk_hit_count(conn, [h.embedding_id for h in hits]) >= k)
        for other, cosine in graph_store.embedding_notes(conn, {h.embedding_id: 1.0 - h.distance for h in hits}).items():
            if other != note_id:
                best[other] = max(best.get(other, -1.0), cosine)
    return best


def top(scores: dict[str, float]) -> list[str]:
    return sorted(scores, key=lambda n: (-scores[n], n))[:TOP]


def evaluate(conn, model_id: str, note_ids: list[str], indexed: bool = False) -> dict:
    linked = graph_store.link_neighbours(conn, note_ids)
    overlap, recall_old, recall_new, ms_old, ms_new = [], [], [], [], []
    for note_id in note_ids:
        ann.forget(conn)  # the former way: exact scans
        started = time.perf_counter()
        old = top(per_chunk_similar(conn, note_id, model_id, K))
        ms_old.append((time.perf_counter() - started) * 1000)
        if indexed:
            ann.configure(conn, 1, load_settings().search.ann_rescore, load_settings().search.ann_prefilter)
        started = time.perf_counter()
        new = top(similar_notes(conn, note_id, model_id, K))
        ms_new.append((time.perf_counter() - started) * 1000)
        if old:
            overlap.append(len(set(old) & set(new)) / len(old))
        links = linked.get(note_id, set()) - {note_id}
        recall_old.append(len(links & set(old)) / len(links))
        recall_new.append(len(links & set(new)) / len(links))
    return {"notes": len(note_ids), "overlap@10": statistics.fmean(overlap),
            "link recall@10 per chunk": statistics.fmean(recall_old),
            "link recall@10 note vector": statistics.fmean(recall_new),
            "ms p50 per chunk": statistics.median(ms_old), "ms p50 note vector": statistics.median(ms_new)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("db", type=Path, help="a copy of an embedded database (it is written)")
    parser.add_argument("--notes", type=int, default=300)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--index", action="store_true", help="the current way over the code indexes")
    args = parser.parse_args(argv)
    conn = open_database(args.db)
    model_id = get_meta(conn, EMBEDDING_MODEL_KEY)
    if not model_id:
        parser.error(f"{args.db} holds no vectors")
    started = time.perf_counter()
    written = note_vector_store.refresh_note_vectors(conn, model_id)
    print(f"note vectors: {written} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    if args.index:
        started = time.perf_counter()
        with conn:
            for space in (vector_codes.CHUNKS, vector_codes.NOTES):
                vector_codes.build(conn, model_id, space)
        print(f"code indexes built in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    with_links = sorted(n for n, others in graph_store.link_neighbours(
        conn, [r.note_id for r in graph_store.all_note_refs(conn)]).items() if others - {n})
    sample = random.Random(args.seed).sample(with_links, min(args.notes, len(with_links)))
    for key, value in evaluate(conn, model_id, sample, args.index).items():
        print(f"{key:<28} {value:.3f}" if isinstance(value, float) else f"{key:<28} {value}")
    print(f"rerun: .venv/bin/python bench/suggest_eval.py {args.db} --notes {args.notes} --seed {args.seed}"
          + " --index" * args.index)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
