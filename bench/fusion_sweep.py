"""How the fusion settings were chosen: retrieve each query's two candidate lists once, fuse them many ways.

    .venv/bin/python bench/fusion_sweep.py ../shared/eval/xquad-r-de/sentences [--max-queries N]

Needs the scratch index that `mindtui eval beir DIR` builds (run that first). Prints nDCG@10 of
reciprocal rank fusion for several k and vector-list weights, and of a convex combination of
min-max, z-score or fixed-floor normalised scores (also on shorter pools), next to each list alone.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mindtui.config import load_settings  # noqa: E402
from mindtui.evaluation import workspace  # noqa: E402
from mindtui.evaluation.metrics import ndcg_at  # noqa: E402
from mindtui.search import fusion  # noqa: E402
from mindtui.search.engine import SearchOptions, make_search_engine  # noqa: E402
from mindtui.search.query import parse_query  # noqa: E402
from mindtui.store import open_database  # noqa: E402


def rrf(fts, vec, k, w_fts=1.0, w_vec=1.0):
    """The engine's own reciprocal rank fusion."""
    scores = fusion.rrf({"fts": fts, "vector": vec}, k, {"fts": w_fts, "vector": w_vec})
    return sorted(scores, key=lambda d: -scores[d])


def convex(fts, vec, alpha, method="minmax"):
    """The engine's own convex fusion (min-max or z-score normalisation)."""
    scores = fusion.convex({"fts": fts, "vector": vec}, alpha, method)
    return sorted(scores, key=lambda d: -scores[d])


def convex_floor(fts, vec, alpha, vec_floor):
    """Theoretical-minimum normalisation: BM25 from 0, cosine from a fixed floor, both up to the list's best."""
    def scaled(values, low):
        high = max(values.values())
        return {d: (x - low) / (high - low) if high > low else 1.0 for d, x in values.items()}
    a = scaled({d: -s for d, s in fts}, 0.0) if fts else {}
    b = scaled(dict(vec), vec_floor) if vec else {}
    scores = {d: (1 - alpha) * a.get(d, 0.0) + alpha * b.get(d, 0.0) for d in set(a) | set(b)}
    return sorted(scores, key=lambda d: -scores[d])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("beir_dir", type=Path)
    parser.add_argument("--max-queries", type=int)
    parser.add_argument("--scratch", type=Path)
    parser.add_argument("--split", default="test", help="qrels split (tune on train, report test)")
    parser.add_argument("--pool", type=int, default=100, help="candidates per list (default 100, as eval beir)")
    args = parser.parse_args()
    settings = load_settings()
    beir = workspace.load_beir(args.beir_dir, args.split)
    vault, db = workspace.beir_workspace(settings, args.beir_dir, args.scratch)
    path_to_doc = workspace.write_beir_vault(beir, vault)
    conn = open_database(db, readonly=True)
    engine = make_search_engine(conn, settings)
    facts_path = {}
    query_ids = sorted(beir.queries)[:args.max_queries] if args.max_queries else sorted(beir.queries)
    lists = {}
    options = SearchOptions(log=False)
    for number, qid in enumerate(query_ids, 1):
        text = beir.queries[qid]
        notices: list[str] = []
        fts = engine._fts(parse_query(text), options, args.pool)
        vec = engine._vector(text, options, args.pool, notices)
        ids = {h.note_id for h in fts + vec} - set(facts_path)
        if ids:
            for nid, path in conn.execute(f"SELECT note_id, path FROM notes WHERE note_id IN ({','.join('?' * len(ids))})",
                                          list(ids)):
                facts_path[nid] = path_to_doc.get(path, path)
        lists[qid] = ([(facts_path[h.note_id], h.score) for h in fts], [(facts_path[h.note_id], h.score) for h in vec])
        if number % 100 == 0:
            print(f"retrieved {number}/{len(query_ids)}", file=sys.stderr)

    def score(fuse):
        return sum(ndcg_at(fuse(*lists[q]), beir.qrels[q], 10) for q in query_ids) / len(query_ids)

    rows = [("fts alone", score(lambda f, v: [d for d, _ in f])), ("vector alone", score(lambda f, v: [d for d, _ in v]))]
    for k in (10, 20, 40, 60, 100):
        for w_vec in (1.0, 1.5, 2.0):
            rows.append((f"rrf k={k} w_vec={w_vec}", score(lambda f, v, k=k, w=w_vec: rrf(f, v, k, 1.0, w))))
    for alpha in (0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8):
        rows.append((f"convex alpha={alpha}", score(lambda f, v, a=alpha: convex(f, v, a))))
    for alpha in (0.4, 0.45, 0.5, 0.55, 0.6):
        for pool in (20, 50):
            rows.append((f"convex alpha={alpha} pool {pool}",
                         score(lambda f, v, a=alpha, n=pool: convex(f[:n], v[:n], a))))
        rows.append((f"zscore alpha={alpha}", score(lambda f, v, a=alpha: convex(f, v, a, "zscore"))))
        for pool in (20, 50):
            rows.append((f"zscore alpha={alpha} pool {pool}",
                         score(lambda f, v, a=alpha, n=pool: convex(f[:n], v[:n], a, "zscore"))))
        for floor in (0.0, 0.5, 0.7):
            rows.append((f"floor {floor} alpha={alpha}",
                         score(lambda f, v, a=alpha, fl=floor: convex_floor(f, v, a, fl))))
    print(f"{'fusion':<26} nDCG@10   ({args.beir_dir} {args.split}, {len(query_ids)} queries, pool {args.pool})")
    for name, value in rows:
        print(f"{name:<26} {value:.4f}")
    print(f"\nrerun: .venv/bin/python bench/fusion_sweep.py {args.beir_dir}")
    conn.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
