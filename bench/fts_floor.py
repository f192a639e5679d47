"""Where the slowest as-you-type full-text queries spend their time (issue 21, item 5).

    .venv/bin/python bench/fts_floor.py DB [--queries 300] [--seed 1] [--show 12]

DB: e.g. the 1M-chunk database of bench/scale_bench.py (`--keep-import`). Times the same
keystroke queries as scale_bench's item 5 (scale_parts.keystroke_queries) through the service
(fts mode, the TUI's limit), then, for the slowest, the parts FTS5 cannot skip:

- rows: how many full-text rows the MATCH expression matches, and `iterate` the time to walk
  them without ranking (count(*));
- `ranked`: bm25 over every matching row, the best 200 (what the engine asks for its pool);
- per prefix phrase (`"githu"*`): the time to walk it alone. FTS5 merges a prefix phrase's
  terms into one list in memory for every query, before the first row, and bm25 walks the
  phrase once more to count the rows for its idf: a prefix phrase in most rows costs that twice
  whatever the query around it proves.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import scale_parts as parts  # noqa: E402

from mindtui.audience import Audience  # noqa: E402
from mindtui.config import load_settings  # noqa: E402
from mindtui.search.query import parse_query  # noqa: E402
from mindtui.service import SearchOptions, Service  # noqa: E402
from mindtui.store import open_database  # noqa: E402
from mindtui.store.search_store import FTS_WEIGHTS  # noqa: E402

POOL_ROWS = 200  # search.candidate_pool x 4: the rows the engine's full-text list asks for


def timed(conn, sql: str, args: tuple) -> tuple[float, list]:
    started = time.perf_counter()
    rows = conn.execute(sql, args).fetchall()
    return (time.perf_counter() - started) * 1000, rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", type=Path)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--show", type=int, default=12)
    args = parser.parse_args(argv)
    typed = parts.keystroke_queries(args.db, args.queries, args.seed)
    settings = load_settings().with_overrides(db=str(args.db))
    options = SearchOptions(mode="fts", limit=parts.KEYSTROKE_LIMIT, log=False)
    times = []
    with Service(settings, audience=Audience.OWNER) as service:
        service.search("warm up", options)
        for query in typed:
            started = time.perf_counter()
            service.search(query, options)
            times.append(((time.perf_counter() - started) * 1000, query))
    p50, p95 = parts.p50_p95([t for t, _ in times])
    print(f"{len(typed)} keystroke queries on {args.db}: service fts p50 {p50:.0f} ms, p95 {p95:.0f} ms")
    conn = open_database(args.db, readonly=True)
    weights = ", ".join(map(str, FTS_WEIGHTS))
    print(f"\n{'service':>8} {'rows':>9} {'iterate':>8} {'ranked':>7}  query; prefix phrases: ms to walk alone")
    for took, query in sorted(times, reverse=True)[:args.show]:
        expression = parse_query(query).fts
        if expression is None:
            continue
        walk, count = timed(conn, "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (expression,))
        ranked, _ = timed(conn, f"SELECT rowid, bm25(chunks_fts, {weights}) AS s FROM chunks_fts"
                                " WHERE chunks_fts MATCH ? ORDER BY s LIMIT ?", (expression, POOL_ROWS))
        prefixes = [term for term in expression.split(" OR ") if term.endswith("*")]
        alone = ", ".join(f"{term} {timed(conn, 'SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?', (term,))[0]:.0f}"
                          for term in prefixes)
        print(f"{took:8.0f} {count[0][0]:9,} {walk:8.0f} {ranked:7.0f}  {query!r}; {alone or '-'}")
    conn.close()
    print(f"\nrerun: .venv/bin/python bench/fts_floor.py {args.db} --queries {args.queries} --seed {args.seed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
