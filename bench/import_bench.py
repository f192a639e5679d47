"""Import speed and memory on a large vault: a cold import, then a no-change re-run.

Each phase runs in its own process, so peak RSS is that phase's own high-water mark.
Targets (issue 1/7): cold >= 300 notes/s, no-change re-run < 2 s, peak RSS < 400 MB.

    .venv/bin/python bench/import_bench.py [VAULT]   (default: ../shared/eval/obsidian-hub-en/vault)
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_VAULT = Path(__file__).resolve().parents[2] / "shared" / "eval" / "obsidian-hub-en" / "vault"


def child(vault: str, db: str) -> None:
    from mindtui.config import load_settings
    from mindtui.store import open_database
    from mindtui.vault.importer import VaultImporter
    from mindtui.vault.types import load_type_registry

    settings = load_settings()
    started = time.perf_counter()
    conn = open_database(db)
    report = VaultImporter(conn, Path(vault), load_type_registry(settings.types_file),
                           exclude=settings.get("import.exclude"),
                           max_file_bytes=settings.get("import.max_file_bytes")).run()
    conn.close()
    seconds = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "peak_mb": peak_mb, **{k: v for k, v in report.as_dict().items()
                                                                   if k != "warnings"}}))


def run_phase(vault: Path, db: Path) -> dict:
    done = subprocess.run([sys.executable, __file__, "--child", str(vault), str(db)],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main() -> None:
    vault = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_VAULT
    if not vault.is_dir():
        sys.exit(f"no vault at {vault} (pass one as the first argument)")
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        cold = run_phase(vault, db)
        warm = run_phase(vault, db)
        size_mb = db.stat().st_size / 1e6
    notes = cold["notes_total"]
    rows = [
        ("cold import", cold["seconds"], notes / cold["seconds"], cold["peak_mb"], ">= 300 notes/s, < 400 MB"),
        ("no-change re-run", warm["seconds"], notes / warm["seconds"], warm["peak_mb"], "< 2 s"),
    ]
    print(f"vault: {vault}  notes: {notes}  chunks: {cold['chunks_total']}  explicit edges: {cold['explicit_total']}"
          f"  unresolved: {cold['unresolved_total']}  db: {size_mb:.1f} MB")
    print(f"{'phase':<18}{'seconds':>9}{'notes/s':>10}{'peak RSS MB':>13}  target")
    for name, seconds, rate, peak, target in rows:
        print(f"{name:<18}{seconds:>9.2f}{rate:>10.0f}{peak:>13.0f}  {target}")
    print(f"no-change re-run unchanged notes: {warm['notes_unchanged']} (must equal {notes})")
    print(f"rerun: .venv/bin/python bench/import_bench.py {vault}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
    else:
        main()
