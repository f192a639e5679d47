"""Vectors for vector-search benchmarks at a million chunks, without a day of embedding.

    .venv/bin/python bench/vector_fixture.py --real-db REAL.db --n 1000000 --out /tmp/vectors-1m.npy

Each fixture vector mixes two real e5 passage vectors of REAL.db (any mindtui database that has
been embedded): w * a + (1 - w) * b with w uniform in [0, 1], plus Gaussian noise, normalised.
Mixing keeps what makes e5 vectors hard for quantisation (the large component they all share,
the crowding of cosines) while spreading them over many more points than the real ones. The
held-out queries are real e5 *query* vectors of texts that are not in the fixture (see
ann_bench.py). With fewer than 10,000 real vectors the fixture is more clustered than a real
vault: recall figures from it flatter any index; the script says so.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

NOISE = 0.01  # per dimension; e5 components are ~0.05 (1/sqrt(384)), so the noise moves a vector by ~0.2 of its length


def real_vectors(db_path: Path) -> np.ndarray:
    """Every stored passage vector of a mindtui database (float32, one row each)."""
    from mindtui.store import open_database

    conn = open_database(db_path)
    try:
        blobs = [row[0] for row in conn.execute("SELECT embedding FROM vec_chunks")]
    finally:
        conn.close()
    if not blobs:
        raise SystemExit(f"{db_path} holds no vectors: run `mindtui embed --db {db_path}` first")
    return np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1).copy()


def mix(real: np.ndarray, n: int, seed: int, noise: float = NOISE) -> np.ndarray:
    """n normalised mixtures of two real vectors each (deterministic for a seed)."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, real.shape[1]), dtype=np.float32)
    step = 100_000
    for start in range(0, n, step):
        size = min(step, n - start)
        a = real[rng.integers(len(real), size=size)]
        b = real[rng.integers(len(real), size=size)]
        w = rng.random(size, dtype=np.float32)[:, None]
        block = w * a + (1 - w) * b + rng.normal(scale=noise, size=a.shape).astype(np.float32)
        out[start:start + size] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--real-db", type=Path, required=True, help="a mindtui database with real e5 vectors")
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True, help="a .npy file")
    args = parser.parse_args(argv)
    real = real_vectors(args.real_db)
    if len(real) < 10_000:
        print(f"warning: only {len(real)} real vectors (>= 10,000 make a fixture as spread as a real vault)",
              file=sys.stderr)
    np.save(args.out, mix(real, args.n, args.seed))
    print(f"{args.n} vectors from {len(real)} real ones -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
