"""Vector search designs at scale, side by side, in one run: recall@50 against the exact float
ranking and latency as a ratio to a numpy float32 exact scan of the same vectors.

    .venv/bin/python bench/ann_bench.py --real-db REAL.db --queries-from VAULT --n 100000
    .venv/bin/python bench/ann_bench.py --real-db REAL.db --queries-from VAULT --n 1000000 --queries 300
    .venv/bin/python bench/ann_bench.py --real-db REAL.db --queries-npy Q.npy --n 1000000 --designs int8,bit
    .venv/bin/python bench/ann_bench.py --searched SEARCH.db --queries-npy Q.npy --prefilter 0,500 --rescore 64,300

REAL.db: any embedded mindtui database (its passage vectors are mixed into N fixture vectors, see
vector_fixture.py). VAULT: a folder of notes whose titles and headings become the held-out real
e5 *query* vectors (`query: ` prefix, embedded here by the real model; none of them is in the
fixture). Designs, every vector in one SQLite file:
- `sqlite-vec exact`: vec0 float[384] cosine, brute force (what mindtui does below the index size).
- `centred bit + rescore R`: vec0 bit[384] of sign(v - corpus mean), hamming top R, rescored by
  the float vectors read back from the file.
- `ivf L probe P`: k-means lists (L ~ sqrt N, trained on a sample) as a vec0 partition key; the P
  lists nearest the query are searched in one statement (`list_id IN (...)`), k per list.
- `int8 numpy`: the vectors centred and quantised to int8, scanned in memory (read from the file
  once), top 500 rescored by float.
- `int4 top P + int8 + rescore R`: what mindtui runs above search.ann_min_vectors, through
  store/vectors.knn: the code index built in the file (vector_codes.build), loaded once (its int4
  codes derived in memory), the int4 codes scanned by numkong's SIMD products, the int8 codes of
  their top P scanned again, the top R of those rescored by their float16 copies read back from
  the file. `int8 numkong` (P 0) scans every int8 code instead; `int8 usearch` by usearch's
  exact search; `sign bits top P`: sign bits of the codes scanned by hamming as the first stage.
- `usearch HNSW`: a float HNSW graph (M=32, ef 512) in memory, for comparison (it would have to be
  serialised into the file).
`--searched SEARCH.db` compares only the code index's prefilters and pools over an existing
embedded database (scale_bench.py's search-N.db under its --work, say), read-only, against a
numpy scan of that database's own vectors.
Targets (issue 3.2): recall@50 >= 0.95, p50 <= 0.35x and p95 <= 0.6x the numpy exact scan.
The machine is shared and noisy: compare the ratios of one run, not absolute times across runs.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vector_fixture import mix, real_vectors  # noqa: E402

K = 50


def query_texts(vault: Path, limit: int, seed: int) -> list[str]:
    texts = set()
    for path in sorted(vault.rglob("*.md")):
        texts.add(path.stem)
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if re.match(r"#{1,3} \S", line):
                texts.add(line.lstrip("#").strip())
    texts = sorted(t for t in texts if 3 <= len(t) <= 120)
    rng = np.random.default_rng(seed)
    return [texts[i] for i in rng.choice(len(texts), size=min(limit, len(texts)), replace=False)]


def embed_queries(texts: list[str]) -> np.ndarray:
    from mindtui.config import load_settings
    from mindtui.models.holder import ModelHolder

    embedder = ModelHolder().embedder(load_settings())
    return np.stack([embedder.embed_query(t) for t in texts]).astype(np.float32)


def connect(path: Path):
    """A mindtui database: its vec_chunks is the float table every design reads or rescores from."""
    from mindtui.store import open_database

    return open_database(path)


DESIGNS = ("exact", "bit", "ivf", "int8", "hnsw")


def kmeans(sample: np.ndarray, lists: int, seed: int, rounds: int = 10) -> np.ndarray:
    """Spherical k-means (cosine): centroids normalised each round."""
    rng = np.random.default_rng(seed)
    centroids = sample[rng.choice(len(sample), size=lists, replace=False)].copy()
    for _ in range(rounds):
        assign = np.argmax(sample @ centroids.T, axis=1)
        sums = np.zeros_like(centroids)
        np.add.at(sums, assign, sample)
        empty = np.linalg.norm(sums, axis=1) == 0
        sums[empty] = sample[rng.choice(len(sample), size=int(empty.sum()), replace=False)]
        centroids = sums / np.linalg.norm(sums, axis=1, keepdims=True)
    return centroids.astype(np.float32)


def assign_lists(vectors: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    out = np.empty(len(vectors), dtype=np.int64)
    for start in range(0, len(vectors), 50_000):
        out[start:start + 50_000] = np.argmax(vectors[start:start + 50_000] @ centroids.T, axis=1)
    return out


def timed(fn, queries):
    times, answers = [], []
    for q in queries:
        started = time.perf_counter()
        answers.append(fn(q))
        times.append((time.perf_counter() - started) * 1000)
    return answers, times


def recall(answers, truth) -> float:
    return statistics.mean(len(set(a[:K]) & set(t)) / K for a, t in zip(answers, truth))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--real-db", type=Path, help="the vectors mixed into the fixture (all but --searched)")
    parser.add_argument("--searched", type=Path,
                        help="instead of a fixture: an embedded database with its code index built (read-only),"
                             " its code index compared (--prefilter x --rescore) against its own vectors' exact ranking")
    queries = parser.add_mutually_exclusive_group(required=True)
    queries.add_argument("--queries-from", type=Path, help="a vault whose titles/headings are queries")
    queries.add_argument("--queries-npy", type=Path, help="query vectors saved before (float32, one row each)")
    parser.add_argument("--designs", default=",".join(DESIGNS), help=f"comma-separated, of {', '.join(DESIGNS)}")
    parser.add_argument("--rescore", default="64,100,300", help="code index: the rescoring pools R to compare")
    parser.add_argument("--prefilter", default="0,500,1000",
                        help="code index: the int4 prefilters P to compare (0: every int8 code scanned)")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--db", type=Path, help="the bench's SQLite file (default: a temporary one)")
    args = parser.parse_args(argv)
    if args.searched:
        return searched_database(args, load_queries(args))
    if not args.real_db:
        parser.error("--real-db is required (or --searched)")

    real = real_vectors(args.real_db)
    vectors = mix(real, args.n, args.seed)
    designs = set(args.designs.split(","))
    queries = load_queries(args)
    ids = np.arange(1, args.n + 1)
    print(f"{args.n} fixture vectors from {len(real)} real ones; {len(queries)} held-out real query vectors",
          file=sys.stderr)

    truth, base_times = timed(lambda q: numpy_exact(vectors, ids, q), queries)
    folder = Path(tempfile.mkdtemp(prefix="ann-bench-"))
    conn = connect(args.db or folder / "ann.db")
    rows = []

    def row(name, answers, times, build_s=0.0):
        rows.append((name, recall(answers, truth), np.percentile(times, 50), np.percentile(times, 95), build_s))

    # -- sqlite-vec exact -------------------------------------------------------------------
    started = time.perf_counter()
    with conn:
        conn.executemany("INSERT INTO vec_chunks(rowid, embedding) VALUES (?, ?)",
                         ((int(i), v.tobytes()) for i, v in zip(ids, vectors)))
    flat_s = time.perf_counter() - started
    if "exact" in designs:
        sample_q = queries[: min(30, len(queries))]  # the exact scan is slow: fewer queries suffice for its time
        flat_answers, flat_times = timed(lambda q: [r[0] for r in conn.execute(
            "SELECT rowid FROM vec_chunks WHERE embedding MATCH ? AND k = ?", (q.tobytes(), K))], sample_q)
        rows.append(("sqlite-vec exact", recall(flat_answers, truth[: len(sample_q)]),
                     np.percentile(flat_times, 50), np.percentile(flat_times, 95), flat_s))
    if "int8" in designs:
        code_index(conn, queries, args, row)
    if "hnsw" in designs:
        hnsw(vectors, ids, queries, row)

    mean = vectors.mean(axis=0)
    if "bit" in designs:
        centred_bits(conn, vectors, ids, mean, queries, row, flat_s)
    if "ivf" in designs:
        ivf(conn, vectors, ids, mean, queries, row, args)
    if "int8" in designs:
        int8_numpy(vectors, ids, mean, queries, truth, rows)
    print_table(args, rows, base_times)
    return 0


def load_queries(args) -> np.ndarray:
    if args.queries_npy:
        return np.load(args.queries_npy).astype(np.float32)[: args.queries]
    return embed_queries(query_texts(args.queries_from, args.queries, args.seed))


def numpy_exact(vectors, ids, q):
    """The yardstick: the exact top K by a numpy float32 scan."""
    scores = vectors @ q
    top = np.argpartition(-scores, K)[:K]
    return list(ids[top[np.argsort(-scores[top])]])


def searched_database(args, queries) -> int:
    """--searched: the product's KNN over an existing database's code index (nothing written),
    each prefilter and pool, against a numpy scan of the database's own vectors."""
    from mindtui.store import ann, open_database
    from mindtui.store import vectors as vector_store

    conn = open_database(args.searched, readonly=True)
    rowids, blobs = [], []
    for rowid, blob in conn.execute("SELECT rowid, embedding FROM vec_chunks"):
        rowids.append(rowid)
        blobs.append(blob)
    ids = np.asarray(rowids, dtype=np.int64)
    vectors = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(ids), -1)
    del blobs
    ann.configure(conn, 1, 1, 0)
    started = time.perf_counter()
    if ann.index_for(conn) is None:
        raise SystemExit(f"{args.searched}: no code index built (its nightly's maintain step builds it)")
    print(f"{len(ids)} vectors; the code index loaded in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    truth, base_times = timed(lambda q: numpy_exact(vectors, ids, q), queries)
    rows = []
    for prefilter in map(int, args.prefilter.split(",")):
        for pool in map(int, args.rescore.split(",")):
            ann.configure(conn, 1, pool, prefilter)
            answers, times = timed(lambda q: [h.embedding_id for h in vector_store.knn(conn, q, K)], queries)
            first = f"int4 top {prefilter} + int8" if prefilter else "int8 numkong"
            rows.append((f"{first} + rescore {pool}", recall(answers, truth), np.percentile(times, 50),
                         np.percentile(times, 95), 0.0))
    conn.close()
    args.n = len(ids)
    print_table(args, rows, base_times)
    return 0


def code_index(conn, queries, args, row):
    """mindtui's own path: the code index in the file, searched through store/vectors.knn, with
    the int4 prefilters P (0: every int8 code scanned) and rescoring pools R compared; usearch's
    exact int8 search and sign bits scanned by hamming (in memory) in place of the int4 stage."""
    from mindtui.store import ann, vector_codes
    from mindtui.store import vectors as vector_store

    started = time.perf_counter()
    vector_codes.build(conn, "bench")
    built_s = time.perf_counter() - started
    started = time.perf_counter()
    ann.configure(conn, 1, 1, 0)
    snapshot = ann.index_for(conn)  # loaded once per process: not part of a query
    load_s = time.perf_counter() - started
    print(f"int8 codes: built in {built_s:.1f} s, loaded (and int4 codes derived) in {load_s:.1f} s", file=sys.stderr)
    pools = list(map(int, args.rescore.split(",")))
    prefilters = list(map(int, args.prefilter.split(",")))
    knn = lambda q: [h.embedding_id for h in vector_store.knn(conn, q, K)]  # noqa: E731
    for prefilter in prefilters:
        for pool in pools:
            ann.configure(conn, 1, pool, prefilter)
            answers, times = timed(knn, queries)
            first = f"int4 top {prefilter} + int8" if prefilter else "int8 numkong"
            row(f"{first} + rescore {pool}", answers, times, built_s)
    chosen = ann.scan
    ann.scan = usearch_scan
    ann.configure(conn, 1, pools[-1], 0)
    answers, times = timed(knn, queries)
    row(f"int8 usearch + rescore {pools[-1]}", answers, times, built_s)
    ann.scan = chosen
    sign_bits(conn, snapshot, queries, prefilters, pools, row, built_s)


def sign_bits(conn, snapshot, queries, prefilters, pools, row, built_s):
    """Sign bits of the int8 codes (48 bytes a vector, in memory) scanned by hamming (numkong)
    as the first stage in place of the int4 codes, then the int8 codes of the best P, the best
    R of those rescored as mindtui does."""
    import numkong

    from mindtui.store import ann

    bits = np.packbits(snapshot.codes > 0, axis=1)
    scale = snapshot.params.scale

    def search(q, prefilter, pool):
        weighted = q * scale
        query_codes = np.clip(np.rint(weighted / np.abs(weighted).max() * 127), -127, 127).astype(np.int8)
        distances = np.asarray(numkong.cdist(np.packbits(weighted > 0)[None, :], bits, metric="hamming",
                                             dtype="u1", out_dtype="float32")).ravel()
        rows = np.argpartition(distances, prefilter - 1)[:prefilter]
        ids = snapshot.ids[rows[ann.scan(query_codes, snapshot.codes[rows], pool)]]
        return [i for i, _ in ann.rescored(conn, ids, q, K)]

    for prefilter in [p * 10 for p in prefilters if p] or [5000]:  # sign bits need far more candidates
        answers, times = timed(lambda q: search(q, prefilter, pools[0]), queries)
        row(f"sign bits top {prefilter} + int8 + rescore {pools[0]}", answers, times, built_s)


def usearch_scan(query_codes, codes, count):
    """ann.scan by usearch's exact int8 search (the same SIMD kernels behind its own top-k)."""
    from mindtui.store import ann
    from usearch.index import MetricKind, search

    found = search(codes, query_codes, count, MetricKind.IP, exact=True, threads=ann.SCAN_THREADS)
    return np.asarray(found.keys, dtype=np.int64)[: len(found)]


def hnsw(vectors, ids, queries, row):
    """usearch's HNSW graph over the float vectors (in memory only)."""
    from usearch.index import Index

    started = time.perf_counter()
    index = Index(ndim=vectors.shape[1], metric="cos", dtype="f32", connectivity=32, expansion_add=128,
                  expansion_search=512)
    index.add(ids, vectors, threads=2)
    built_s = time.perf_counter() - started
    answers, times = timed(lambda q: list(index.search(q, K).keys), queries)
    row("usearch HNSW M32 ef512", answers, times, built_s)


def centred_bits(conn, vectors, ids, mean, queries, row, flat_s):
    """Centred binary + float rescore."""
    started = time.perf_counter()
    conn.execute("CREATE VIRTUAL TABLE bits USING vec0(embedding bit[384])")
    packed = np.packbits(((vectors - mean) > 0).astype(np.uint8), axis=1, bitorder="little")
    with conn:
        conn.executemany("INSERT INTO bits(rowid, embedding) VALUES (?, vec_bit(?))",
                         ((int(i), p.tobytes()) for i, p in zip(ids, packed)))
    bits_s = time.perf_counter() - started

    def bit_search(q, pool):
        code = np.packbits(((q - mean) > 0).astype(np.uint8), bitorder="little").tobytes()
        cands = [r[0] for r in conn.execute("SELECT rowid FROM bits WHERE embedding MATCH vec_bit(?) AND k = ?",
                                            (code, pool))]
        marks = ",".join("?" * len(cands))
        got = conn.execute(f"SELECT rowid, embedding FROM vec_chunks WHERE rowid IN ({marks})", cands).fetchall()
        mat = np.frombuffer(b"".join(g[1] for g in got), dtype=np.float32).reshape(len(got), -1)
        order = np.argsort(-(mat @ q))[:K]
        return [got[i][0] for i in order]

    for pool in (200, 800):
        answers, times = timed(lambda q: bit_search(q, pool), queries)
        row(f"centred bit + rescore {pool}", answers, times, bits_s + flat_s)



def ivf(conn, vectors, ids, mean, queries, row, args):
    """IVF as partition keys (lists of raw vectors, and of vectors less the corpus mean)."""
    lists = max(16, int(round(np.sqrt(args.n))))
    rng = np.random.default_rng(args.seed)
    sample_ids = rng.choice(args.n, size=min(args.n, max(lists * 40, 20_000)), replace=False)
    for label, shift in (("ivf", np.zeros_like(mean)), ("ivf centred", mean)):
        started = time.perf_counter()
        moved = vectors[sample_ids] - shift
        moved /= np.linalg.norm(moved, axis=1, keepdims=True)
        centroids = kmeans(moved, lists, args.seed)
        assignment = assign_lists(vectors - shift, centroids)
        table = "ivf_c" if shift.any() else "ivf"
        conn.execute(f"CREATE VIRTUAL TABLE {table} USING vec0(list_id integer partition key, "
                     "embedding float[384] distance_metric=cosine)")
        with conn:
            conn.executemany(f"INSERT INTO {table}(rowid, list_id, embedding) VALUES (?, ?, ?)",
                             ((int(i), int(a), v.tobytes()) for i, a, v in zip(ids, assignment, vectors)))
        ivf_s = time.perf_counter() - started
        sizes = np.bincount(assignment, minlength=lists)

        def ivf_search(q, probe, table=table, centroids=centroids, shift=shift):
            # Lists by their centroid's cosine with the query itself: scoring them against
            # (q - mean) would favour lists whose centroid points away from the mean (a bias).
            nearest = np.argsort(-(centroids @ q))[:probe]
            marks = ",".join("?" * probe)
            got = conn.execute(f"SELECT rowid, distance FROM {table} WHERE embedding MATCH ? AND k = ? "
                               f"AND list_id IN ({marks})", (q.tobytes(), K, *map(int, nearest))).fetchall()
            got.sort(key=lambda r: r[1])
            return [r[0] for r in got[:K]]

        for probe in (8, 16, 32, 64):
            answers, times = timed(lambda q: ivf_search(q, probe), queries)
            row(f"{label} {lists} probe {probe}", answers, times, ivf_s)
        print(f"{label}: list sizes p50 {np.median(sizes):.0f}, max {sizes.max()}", file=sys.stderr)



def int8_numpy(vectors, ids, mean, queries, truth, rows):
    started = time.perf_counter()
    centred = vectors - mean
    scale = np.abs(centred).max(axis=0) / 127  # per dimension: one outlier must not flatten the rest
    codes = np.round(centred / scale).astype(np.int8)
    int8_s = time.perf_counter() - started

    def int8_search(q):
        approx = codes.astype(np.float32, copy=False) @ ((q - mean) / scale)  # a float pass over int8 data
        top = np.argpartition(-approx, 500)[:500]
        exact = vectors[top] @ q
        return list(ids[top[np.argsort(-exact)[:K]]])

    answers, times = timed(int8_search, queries[: min(60, len(queries))])
    rows.append(("int8 numpy + rescore 500", recall(answers, truth[: len(answers)]),
                 np.percentile(times, 50), np.percentile(times, 95), int8_s))



def print_table(args, rows, base_times):
    """The table (and what reruns it) on stdout."""
    base50, base95 = np.percentile(base_times, 50), np.percentile(base_times, 95)
    print(f"\n{args.n:,} vectors, {args.queries} queries; numpy float32 exact: p50 {base50:.1f} ms, p95 {base95:.1f} ms")
    print(f"{'design':<44}{'recall@50':>10}{'p50 ms':>9}{'p50 x':>7}{'p95 ms':>9}{'p95 x':>7}{'build s':>9}  target")
    for name, rec, p50, p95, build in rows:
        ok = rec >= 0.95 and p50 <= 0.35 * base50 and p95 <= 0.6 * base95
        print(f"{name:<44}{rec:>10.3f}{p50:>9.1f}{p50 / base50:>7.2f}{p95:>9.1f}{p95 / base95:>7.2f}{build:>9.1f}"
              f"  {'met' if ok else 'missed'}")
    source = f"--queries-npy {args.queries_npy}" if args.queries_npy else f"--queries-from {args.queries_from}"
    data = f"--searched {args.searched}" if args.searched else f"--real-db {args.real_db} --n {args.n}"
    print(f"\nrerun: .venv/bin/python bench/ann_bench.py {data} {source} --queries {args.queries}"
          f" --designs {args.designs} --rescore {args.rescore} --prefilter {args.prefilter}")


if __name__ == "__main__":
    sys.exit(main())
