"""`search` through MCP as an agent sees it: the SDK's stdio client talking to `mindtui mcp`.

    .venv/bin/mindtui --job nightly --vault ../shared/eval/obsidian-hub-en/vault --db /tmp/hub.db
    .venv/bin/python bench/mcp_bench.py /tmp/hub.db [--queries 150] [--mode hybrid|fts|vector]
    .venv/bin/python bench/mcp_bench.py /tmp/hub.db --random-vectors /tmp/hub-rv.db   # as if embedded

Start-up, over --starts fresh server processes: the time until the client is connected (process
start, imports, handshake) and until the first `search` answer (the model still loading: a full-text
answer with a notice), and how long the model then takes to be ready. Warm: p50/p95 of `search`
tool calls (round trip through the SDK, JSON included) once the model is ready, on queries drawn
(seeded) from the index as in search_bench.py. Target (issue 8/10): warm p50 <= 80 ms.
An index without vectors (imported only) measures full-text search plus the query embedding.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

import anyio
import numpy as np
from mcp import Client, StdioServerParameters
from mcp.types import Implementation

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from search_bench import percentiles, sample_queries  # noqa: E402

from mindtui.audience import Audience  # noqa: E402
from mindtui.config import load_settings  # noqa: E402
from mindtui.service import SearchOptions, Service  # noqa: E402
from mindtui.models.files import E5_MODEL_ID  # noqa: E402
from mindtui.models.sweep import run_embed_sweep  # noqa: E402
from mindtui.store import open_database  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
LOADING = "loading"


def server(db: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "mindtui", "mcp", "--db", str(db)],
                                 env=dict(os.environ), cwd=str(REPO))


async def search(client: Client, query: str, mode: str) -> dict:
    result = await client.call_tool("search", {"query": query, "mode": mode, "limit": 10})
    if result.is_error:
        raise SystemExit(f"search failed: {result.content[0].text}")
    return result.structured_content


async def start_up(db: Path, mode: str, deadline_s: float) -> dict:
    """One fresh server: connected, first answer (and whether it was full text only), model ready."""
    started = time.perf_counter()
    async with Client(server(db), read_timeout_seconds=120,
                      client_info=Implementation(name="mcp-bench", version="1")) as client:
        connected = time.perf_counter() - started
        first = await search(client, "how do I sync my vault", mode)
        answered = time.perf_counter() - started
        ready = None
        while time.perf_counter() - started < deadline_s:  # a bench, not a test: polling is what an agent sees
            if not any(LOADING in notice for notice in (await search(client, "sync", mode)).get("notices", [])):
                ready = time.perf_counter() - started
                break
            await anyio.sleep(0.05)
    return {"connected": connected, "first": answered, "first_full_text": bool(first.get("notices")),
            "first_notices": first.get("notices", []), "ready": ready}


async def warm(db: Path, queries: list[str], mode: str) -> tuple[list[float], list[str]]:
    async with Client(server(db), read_timeout_seconds=120,
                      client_info=Implementation(name="mcp-bench", version="1")) as client:
        notices: list[str] = []
        for _ in range(600):  # until the model is ready (or known to be unavailable)
            notices = (await search(client, "warm up", mode)).get("notices", [])
            if not any(LOADING in notice for notice in notices):
                break
            await anyio.sleep(0.1)
        samples = []
        for query in queries:
            begun = time.perf_counter()
            await search(client, query, mode)
            samples.append((time.perf_counter() - begun) * 1000)
    return samples, notices


class RandomVectors:
    """Seeded random unit vectors under the real model's id: a timing stand-in for an embedded index
    (KNN over as many vectors as the real thing; the ranking means nothing)."""

    def __init__(self, model_id: str, dim: int = 384) -> None:
        self.model_id, self.dim = model_id, dim
        self.rng = np.random.default_rng(7)

    def embed_passages(self, texts):
        vectors = self.rng.normal(size=(len(texts), self.dim)).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def fill_random_vectors(source: Path, target: Path) -> None:
    shutil.copyfile(source, target)
    conn = open_database(target)
    try:
        report = run_embed_sweep(conn, RandomVectors(E5_MODEL_ID), batch_size=512)
        print(f"{target}: {report.embedded} random vectors as {E5_MODEL_ID} ({report.seconds:.1f} s)")
    finally:
        conn.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", type=Path)
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--mode", default="hybrid", choices=["hybrid", "fts", "vector"])
    parser.add_argument("--starts", type=int, default=3, help="fresh server processes for the start-up figures")
    parser.add_argument("--random-vectors", type=Path, metavar="COPY",
                        help="copy DB to COPY, give every chunk a random vector under the real model's id (timing "
                             "only: an imported index measured as if embedded), and measure COPY")
    args = parser.parse_args()
    if args.random_vectors:
        fill_random_vectors(args.db, args.random_vectors)
        args.db = args.random_vectors
    conn = open_database(args.db, readonly=True)
    notes, chunks = conn.execute("SELECT (SELECT count(*) FROM notes), (SELECT count(*) FROM chunks)").fetchone()
    vectors = conn.execute("SELECT count(*) FROM embeddings").fetchone()[0]
    queries = sample_queries(conn, args.queries, args.seed)
    conn.close()

    starts = [anyio.run(start_up, args.db, args.mode, 120.0) for _ in range(args.starts)]
    samples, notices = anyio.run(warm, args.db, queries, args.mode)
    p50, p95 = percentiles(samples)
    # the same calls in this process, straight to the service: what MCP adds is the difference
    settings = load_settings().with_overrides(db=str(args.db))
    with Service(settings, audience=Audience.AGENT) as service:
        options = SearchOptions(mode=args.mode, limit=10)
        service.search("warm up", options)
        direct = []
        for query in queries:
            begun = time.perf_counter()
            service.search(query, options)
            direct.append((time.perf_counter() - begun) * 1000)
    d50, d95 = percentiles(direct)
    print(f"MCP `search` on {args.db}: {notes:,} notes, {chunks:,} chunks, {vectors:,} vectors; mode {args.mode}; "
          f"{len(queries)} queries through the SDK's stdio client")
    print(f"warm MCP search calls       p50 {p50:7.1f} ms   p95 {p95:7.1f} ms   max {max(samples):7.1f} ms   "
          f"target p50 <= 80 ms")
    print(f"the service in-process       p50 {d50:7.1f} ms   p95 {d95:7.1f} ms   (audience agent, same queries)")
    if notices:
        print(f"  notices while warm: {'; '.join(notices)}")
    med = {key: statistics.median(s[key] for s in starts) for key in ("connected", "first")}
    print(f"start-up (median of {len(starts)} fresh servers): connected {med['connected'] * 1000:.0f} ms, "
          f"first search answered {med['first'] * 1000:.0f} ms after spawn "
          f"({sum(s['first_full_text'] for s in starts)}/{len(starts)} from full text with a notice)")
    ready = [s["ready"] for s in starts if s["ready"] is not None]
    if ready:
        print(f"  model ready (hybrid answers) {statistics.median(ready) * 1000:.0f} ms after spawn (median)")
    for s in starts[:1]:
        print(f"  first answer's notices: {s['first_notices']}")
    print(f"\nrerun: .venv/bin/python bench/mcp_bench.py {args.db} --queries {args.queries} --mode {args.mode}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
