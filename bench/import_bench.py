"""Import speed and memory on a large vault, against a markdown-it baseline timed in the same run.

Phases, each in its own process (so peak RSS is that phase's own high-water mark):
  baseline  read every .md file of the vault and parse it with markdown-it-py
            (`MarkdownIt("commonmark").parse(text)`: block and inline rules), nothing else
  cold      `VaultImporter(...).run()` into an empty database
  re-run    the same import again with nothing changed
The files are read once before the first phase, so every phase sees a warm page cache.
The machine may be busy: compare the ratio import/baseline, which both phases share,
rather than seconds across runs. `--rounds N` repeats baseline + cold N times (interleaved)
and shows the round with the median ratio.

Targets (issue): cold import <= 1.5x the baseline, peak RSS < 400 MB, no-change re-run < 2 s.

    .venv/bin/python bench/import_bench.py [VAULT] [--rounds N]
    (default VAULT: ../shared/eval/obsidian-hub-en/vault)
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_VAULT = Path(__file__).resolve().parents[2] / "shared" / "eval" / "obsidian-hub-en" / "vault"
TARGET_RATIO = 1.5
TARGET_PEAK_MB = 400
TARGET_RERUN_S = 2.0


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _children() -> tuple[float, float]:
    """CPU seconds of the worker processes waited for so far, and the largest one's peak RSS (MB)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def _md_files(vault: Path) -> list[Path]:
    return sorted(p for p in vault.rglob("*.md") if p.is_file())


def child_baseline(vault: str) -> None:
    from markdown_it import MarkdownIt

    started, cpu = time.perf_counter(), time.process_time()
    md = MarkdownIt("commonmark")
    files = 0
    for path in _md_files(Path(vault)):
        md.parse(path.read_bytes().decode("utf-8", errors="replace"))
        files += 1
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    print(json.dumps({"seconds": seconds, "cpu": cpu, "peak_mb": _peak_mb(), "files": files}))


def child_import(vault: str, db: str) -> None:
    from mindtui.config import load_settings
    from mindtui.store import open_database
    from mindtui.vault.importer import VaultImporter
    from mindtui.vault.types import load_type_registry

    from mindtui.vault.parallel_notes import WORKERS

    started, cpu = time.perf_counter(), time.process_time()
    settings = load_settings()
    conn = open_database(db)
    report = VaultImporter(conn, Path(vault), load_type_registry(settings.types_file), settings).run()
    conn.close()
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    worker_cpu, worker_mb = _children()  # the importer's workers (vault.parallel_notes), if it started any
    counts = {k: v for k, v in report.as_dict().items() if k != "warnings"}
    # CPU: the importer's and its workers'. Peak RSS: the importer's, plus each worker at the
    # largest one's peak (an upper bound of what they held at once).
    print(json.dumps({"seconds": seconds, "cpu": cpu + worker_cpu, "peak_mb": _peak_mb() + WORKERS * worker_mb,
                      "importer_mb": _peak_mb(), "worker_mb": worker_mb, **counts}))


def run_child(*args: str) -> dict:
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"phase {args[0]} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def warm_page_cache(vault: Path) -> None:
    for path in _md_files(vault):
        path.read_bytes()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("vault", nargs="?", type=Path, default=DEFAULT_VAULT)
    parser.add_argument("--rounds", type=int, default=1, help="baseline + cold import pairs (median ratio shown)")
    args = parser.parse_args()
    vault = args.vault.resolve()
    if not vault.is_dir():
        sys.exit(f"no vault at {vault} (pass one as the first argument)")
    warm_page_cache(vault)
    rounds = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(max(1, args.rounds)):
            db = Path(tmp) / f"bench{n}.db"
            base = run_child("--baseline", str(vault))
            cold = run_child("--import", str(vault), str(db))
            rounds.append((base, cold, db))
        warm = run_child("--import", str(vault), str(rounds[-1][2]))
        size_mb = rounds[-1][2].stat().st_size / 1e6

    ratios = [c["seconds"] / b["seconds"] for b, c, _ in rounds]
    ratio = statistics.median_low(ratios)
    base, cold, _ = rounds[ratios.index(ratio)]  # the table shows the round with the median ratio
    notes = cold["notes_total"]
    print(f"vault: {vault}")
    print(f"notes: {notes} (baseline parsed {base['files']} .md files)  chunks: {cold['chunks_total']}"
          f"  explicit edges: {cold['explicit_total']}  unresolved: {cold['unresolved_total']}  db: {size_mb:.1f} MB")
    if len(rounds) > 1:
        print("rounds (baseline s / import s = ratio): " + ", ".join(
            f"{b['seconds']:.1f}/{c['seconds']:.1f}={r:.2f}" for (b, c, _), r in zip(rounds, ratios)))
    # cpu s / cpu ratio: the process's own CPU time, less sensitive to a busy machine than seconds.
    print(f"{'phase':<18}{'seconds':>9}{'ratio':>8}{'cpu s':>8}{'cpu ratio':>10}{'notes/s':>9}{'peak RSS MB':>13}"
          "  target")
    print(f"{'baseline':<18}{base['seconds']:>9.2f}{1.0:>8.2f}{base['cpu']:>8.2f}{1.0:>10.2f}"
          f"{base['files'] / base['seconds']:>9.0f}{base['peak_mb']:>13.0f}  (markdown-it commonmark parse of every .md file)")
    verdict = "ok" if ratio <= TARGET_RATIO and cold["peak_mb"] < TARGET_PEAK_MB else "MISSED"
    print(f"{'cold import':<18}{cold['seconds']:>9.2f}{ratio:>8.2f}{cold['cpu']:>8.2f}{cold['cpu'] / base['cpu']:>10.2f}"
          f"{notes / cold['seconds']:>9.0f}{cold['peak_mb']:>13.0f}  <= {TARGET_RATIO}x baseline, < {TARGET_PEAK_MB} MB: {verdict}")
    verdict = "ok" if warm["seconds"] < TARGET_RERUN_S and warm["peak_mb"] < TARGET_PEAK_MB else "MISSED"
    print(f"{'no-change re-run':<18}{warm['seconds']:>9.2f}{'':>8}{warm['cpu']:>8.2f}{'':>10}"
          f"{notes / warm['seconds']:>9.0f}{warm['peak_mb']:>13.0f}  < {TARGET_RERUN_S:g} s: {verdict}")
    if warm["notes_unchanged"] != notes:
        print(f"WARNING: the re-run found {notes - warm['notes_unchanged']} changed notes (expected none)")
    print(f"rerun: .venv/bin/python bench/import_bench.py {vault}" + (f" --rounds {args.rounds}" if args.rounds > 1 else ""))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--baseline":
        child_baseline(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "--import":
        child_import(sys.argv[2], sys.argv[3])
    else:
        main()
