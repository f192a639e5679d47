"""Every figure of issue 21 (ten years of notes) with its target and the command that reruns it.

    .venv/bin/python bench/scale_bench.py --real-db REAL.db            # 100k notes, 1M chunks and vectors
    .venv/bin/python bench/scale_bench.py --real-db REAL.db --quick    # 10k notes, 100k vectors, < 5 min

REAL.db: an embedded mindtui database whose passage vectors the fixture mixes (vector_fixture.py;
/work/cache/hub-embedded.db has 23,640 hub vectors). The source vault (default
../shared/eval/obsidian-hub-en/vault) is recombined by make_vault.py into the vaults measured,
and its titles and headings are the held-out real query vectors (embedded here by the real model,
as in ann_bench.py). What is measured, in one run (work files under --work, vaults reused):
- item 5, import: a vault of --notes notes: cold import against a read + markdown-it baseline
  (bench/import_bench.py's phases, each in its own process for its peak RSS), a re-run with
  nothing changed, a re-run after 100 notes were edited;
- the search database: a vault with --chunks chunks or more (the same generator, more notes),
  imported, its chunk texts given fixture vectors (padded to --vectors): no day of embedding;
- item 2: recall@50 of the product's KNN (store.vectors.knn, whatever index it uses) against
  the exact float ranking, and its p50/p95 as ratios to a numpy float32 exact scan of the same
  vectors timed in the same run;
- item 4: a note's similar notes (graph.suggest.similar_notes: one note-vector query over the
  code indexes the nightly builds), and the nightly's close pairs for link suggestions from
  scratch, with nothing changed and after 100 notes' vectors changed (curation.close_notes);
- item 5, search: the TUI's per-keystroke full-text query (prefixes of queries drawn from the
  vault) and hybrid search, through the service;
- item 6: the real model's embedding sweep with a budget on a copy of the import database;
- item 7: the maintenance step and the database's bytes per note and per chunk.
Exit status 1 when any target is missed. The machine is shared: compare ratios within one run.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_parts as parts  # noqa: E402
from make_vault import DEFAULT_SOURCE  # noqa: E402

FULL = {"notes": 100_000, "chunks": 1_000_000, "vectors": 1_000_000, "queries": 200, "typed": 300,
        "suggest": 50, "budget": 30.0}
QUICK = {"notes": 10_000, "chunks": 0, "vectors": 100_000, "queries": 200, "typed": 300,
         "suggest": 50, "budget": 10.0}
ITEMS = ("2", "4", "5", "6", "7")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--real-db", type=Path, required=True, help="an embedded database whose vectors are mixed")
    parser.add_argument("--quick", action="store_true", help="10k notes, 100k vectors (the targets still apply)")
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="the vault make_vault.py recombines")
    parser.add_argument("--work", type=Path, help="work folder (default /tmp/mindtui-scale[-quick])")
    parser.add_argument("--notes", type=int, help="notes of the import vault (100,000; quick 10,000)")
    parser.add_argument("--chunks", type=int, help="chunks of the search database (1,000,000; quick: the import vault's)")
    parser.add_argument("--vectors", type=int, help="vectors in the search database (1,000,000; quick 100,000)")
    parser.add_argument("--queries", type=int, help="held-out real query vectors for item 2 (>= 200)")
    parser.add_argument("--typed", type=int, help="per-keystroke queries for item 5 (>= 300)")
    parser.add_argument("--only", default=",".join(ITEMS), help=f"items to measure, of {','.join(ITEMS)}")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep-import", action="store_true",
                        help="use the import database of an earlier run (item 5's import figures are not measured)")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    for name in ("notes", "chunks", "vectors", "queries", "typed"):
        if getattr(args, name) is None:
            setattr(args, name, sizes[name])
        elif getattr(args, name) < 0:
            parser.error(f"--{name} must be >= 0")
    args.suggest, args.budget = sizes["suggest"], sizes["budget"]
    args.only = tuple(i.strip() for i in args.only.split(",") if i.strip())
    unknown = sorted(set(args.only) - set(ITEMS))
    if unknown:
        parser.error(f"--only: no item {', '.join(unknown)} (items: {', '.join(ITEMS)})")
    if not args.real_db.is_file():
        parser.error(f"--real-db: no file {args.real_db}")
    if not args.source.is_dir():
        parser.error(f"--source: no vault at {args.source}")
    args.work = args.work or default_work(args.quick)
    return args


def default_work(quick: bool) -> Path:
    return Path("/tmp/mindtui-scale-quick" if quick else "/tmp/mindtui-scale")


def rerun_command(args: argparse.Namespace, item: str) -> str:
    flags = " --quick" if args.quick else ""
    if args.work != default_work(args.quick):
        flags += f" --work {args.work}"  # its vaults and databases are reused
    return f".venv/bin/python bench/scale_bench.py --real-db {args.real_db}{flags} --only {item}"


def chunk_count(db: Path) -> tuple[int, int]:
    from mindtui.store import open_database

    conn = open_database(db)  # not read only: a database kept from an older schema is upgraded first
    try:
        return conn.execute("SELECT (SELECT count(*) FROM notes), (SELECT count(*) FROM chunks)").fetchone()
    finally:
        conn.close()


def search_database(args, import_vault: Path, import_db: Path) -> Path:
    """A copy of the import database (quick) or one imported from a vault of at least --chunks chunks."""
    if args.chunks <= 0:  # a copy: the import database stays without vectors for item 6
        db = args.work / f"search-{args.notes}.db"
        if not db.exists():
            parts.copy_database(import_db, db)
        return db
    db = args.work / f"search-{args.chunks}.db"
    if db.exists() and chunk_count(db)[1] >= args.chunks:
        return db
    notes, chunks = chunk_count(import_db)
    wanted = int(args.chunks / max(chunks / max(notes, 1), 0.1) * 1.01) + 1
    vault = parts.make_vault(args.source, wanted, args.seed + 1, args.work / f"vault-{wanted}")
    parts.run_json(str(Path(__file__).resolve().parent / "import_bench.py"), "--import", str(vault), str(db))
    return db


def print_table(figures: list[parts.Figure], args: argparse.Namespace, seconds: float) -> None:
    print(f"issue 21 scale bench{' --quick' if args.quick else ''}: {platform.node()}, {platform.machine()},"
          f" Python {platform.python_version()}, {seconds:.0f} s")
    print(f"| item | figure | value | target | ok | rerun |\n|---|---|---|---|---|---|")
    for f in figures:
        ok = "" if f.ok is None else ("ok" if f.ok else "MISSED")
        print(f"| {f.item} | {f.name} | {f.value} | {f.target} | {ok} | `{f.command}` |")


class FigureList(list):
    """The figures measured so far; each also goes to stderr as it comes (a long run shows progress)."""

    def __iadd__(self, more):
        for f in more:
            print(f"[item {f.item}] {f.name}: {f.value} (target {f.target or '-'})", file=sys.stderr, flush=True)
        return super().__iadd__(more)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    args.work.mkdir(parents=True, exist_ok=True)
    figures = FigureList()
    import_vault = parts.make_vault(args.source, args.notes, args.seed, args.work / f"vault-{args.notes}")
    import_db = args.work / f"import-{args.notes}.db"
    if not (args.keep_import and import_db.exists()) and ("5" in args.only or not import_db.exists()):
        figures += parts.import_figures(import_vault, import_db, rerun_command(args, "5"))
    if set(args.only) & {"2", "4", "5"}:
        from mindtui.models.files import E5_MODEL_ID

        db = search_database(args, import_vault, import_db)
        print(f"search database {db}: filling {args.vectors:,} fixture vectors", file=sys.stderr)
        ids, vectors = parts.fill_vectors(db, args.real_db, args.vectors, args.seed, E5_MODEL_ID)
        print(f"vector index: {parts.vector_index_upkeep(db, E5_MODEL_ID)}", file=sys.stderr)
        if "2" in args.only:
            from ann_bench import embed_queries, query_texts

            queries = embed_queries(query_texts(args.source, args.queries, args.seed))
            figures += parts.knn_figures(db, ids, vectors, queries, rerun_command(args, "2"))
        del vectors
        if "4" in args.only:
            figures += parts.suggestion_figures(db, E5_MODEL_ID, args.suggest, rerun_command(args, "4"))
        if "5" in args.only:
            # Searched as after a nightly: its maintenance step merged the full-text segments.
            figures += parts.maintenance_figures(db, rerun_command(args, "5"))
            figures += parts.search_figures(db, args.typed, args.seed, rerun_command(args, "5"))
    if "6" in args.only:
        figures += parts.embed_figures(import_db, args.work, args.budget, rerun_command(args, "6"))
    if "7" in args.only:
        figures += parts.maintenance_figures(import_db, rerun_command(args, "7"))
    print_table(figures, args, time.monotonic() - started)
    return 1 if any(f.ok is False for f in figures) else 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--sweep-child":
        parts.sweep_child(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(main())
