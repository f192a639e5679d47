"""Links as the test of the graph signals (issue 4/7, item 6) on a real vault.

    .venv/bin/python bench/link_eval.py ../shared/eval/obsidian-help-de/vault [--pairs 100] [--holdout 0.1]

a. Missed links: for random (note, linked note) pairs, how often the linked note is NOT in
   the vector top 10 for the note's text (its first 200 words), and whether `neighbors`
   lists every one of them (it must: links are read, not guessed).
b. Held-out links: a temporary copy of the vault loses a share of its note-to-note links
   (the wikilink becomes plain text); the copy is indexed and embedded; for each note that
   lost links, its top-10 link suggestions are scored by how many lost links they recover:
   vector alone, shared links alone, both fused (RRF), and shared links first with vector
   filling the remaining places (cascade).
Scratch indexes live under <data dir>/eval (reused by the next run).
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mindtui.config import load_settings  # noqa: E402
from mindtui.console import StderrProgress  # noqa: E402
from mindtui.evaluation import workspace  # noqa: E402
from mindtui.evaluation.runs import first_words  # noqa: E402
from mindtui.graph.neighbours import find_note, neighbours  # noqa: E402
from mindtui.graph.suggest import cascade, fuse, shared_link_scores, similar_notes  # noqa: E402
from mindtui.search.engine import SearchOptions, make_search_engine  # noqa: E402
from mindtui.store import graph_store, open_database  # noqa: E402
from mindtui.store.meta import EMBEDDING_MODEL_KEY, get_meta  # noqa: E402
from mindtui.store.notes import resolved_link_paths  # noqa: E402
from mindtui.vault.links import WIKILINK, split_target  # noqa: E402
from mindtui.vault.types import load_type_registry  # noqa: E402


def link_pairs(conn) -> list[tuple[str, str]]:
    """(source path, target path) of resolved wikilinks between two different indexed notes."""
    links = resolved_link_paths(conn, wikilinks_only=True, model_readable_sources=True)
    return sorted((source, target) for source, targets in links.items() for target in targets)


def missed_links(settings, vault: Path, db: Path, count: int, seed: int) -> dict:
    conn = open_database(db, readonly=True)
    pairs = random.Random(seed).sample(link_pairs(conn), count)
    engine = make_search_engine(conn, settings)
    symmetric = load_type_registry(settings.types_file).symmetric_relations
    missed = listed = 0
    for source, target in pairs:
        response = engine.search(first_words(vault / source), SearchOptions(mode="vector", limit=11, log=False))
        top = [r.path for r in response.results if r.path != source][:10]
        missed += target not in top
        found = neighbours(conn, settings, find_note(conn, source), symmetric, ("links_out",))
        listed += target in {n.path for n in found["links_out"]}
    conn.close()
    return {"pairs": count, "not_in_vector_top10": missed, "missed_share": round(missed / count, 3),
            "listed_by_neighbors": listed}


def unlink(text: str, target_names: set[str]) -> tuple[str, int]:
    """Replace wikilinks whose target (path or file name, any case) is in target_names by their label."""
    removed = 0

    def replace(match: re.Match) -> str:
        nonlocal removed
        _, path, _ = split_target(match.group(2))
        key = path.lower().removesuffix(".md")
        if match.group(1) or key not in target_names:
            return match.group(0)
        removed += 1
        label = match.group(2).replace("\\|", "|").partition("|")[2].strip()
        return label or path.rpartition("/")[2]

    return WIKILINK.sub(replace, text), removed


def held_out(settings, vault: Path, db: Path, share: float, seed: int, progress) -> dict:
    conn = open_database(db, readonly=True)
    pairs = link_pairs(conn)
    conn.close()
    chosen = random.Random(seed).sample(pairs, max(1, int(len(pairs) * share)))
    by_source: dict[str, set[str]] = {}
    for source, target in chosen:
        by_source.setdefault(source, set()).add(target)
    copy = Path(tempfile.mkdtemp(prefix="mindtui-heldout-")) / "vault"
    shutil.copytree(vault, copy)
    removed_links = 0
    for source, targets in by_source.items():
        names = set()
        for target in targets:
            stem = target.removesuffix(".md").lower()
            names.update({stem, stem.rpartition("/")[2]})
        text, removed = unlink((copy / source).read_text(encoding="utf-8"), names)
        (copy / source).write_text(text, encoding="utf-8")
        removed_links += removed
    scratch_db = workspace.scratch_dir(settings) / f"heldout-{seed}-{int(share * 100)}.db"
    scratch_db.unlink(missing_ok=True)
    workspace.prepare_vault(settings, copy, scratch_db, progress, progress.message)
    conn = open_database(scratch_db, readonly=True)
    model_id = get_meta(conn, EMBEDDING_MODEL_KEY)
    still_linked = set(link_pairs(conn))
    hidden = [(s, t) for s, t in chosen if (s, t) not in still_linked]
    ids = {ref.path: ref.note_id for ref in graph_store.all_note_refs(conn)}
    hits = {"vector": 0, "links": 0, "vector+links": 0, "links>vector": 0}
    for source in sorted({s for s, _ in hidden}):
        note_id = ids[source]
        lost = {ids[t] for s, t in hidden if s == source}
        linked = graph_store.link_neighbours(conn, [note_id]).get(note_id, set()) | {note_id}
        vector = similar_notes(conn, note_id, model_id, k=48)
        shared = shared_link_scores(conn, note_id)
        for name, rankings in (("vector", [vector]), ("links", [shared]), ("vector+links", [vector, shared]),
                               ("links>vector", [shared, vector])):
            combine = cascade if ">" in name else fuse
            top = {n for n, _ in combine(rankings, linked, 10)}
            hits[name] += len(lost & top)
    conn.close()
    shutil.rmtree(copy.parent, ignore_errors=True)
    return {"link_pairs": len(pairs), "held_out_pairs": len(hidden), "wikilinks_removed": removed_links,
            **{f"recall@10 {k}": round(v / max(len(hidden), 1), 3) for k, v in hits.items()}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--holdout", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    settings = load_settings()
    progress = StderrProgress()
    started = time.monotonic()
    db = workspace.vault_db_path(settings, args.vault)
    workspace.prepare_vault(settings, args.vault, db, progress, progress.message)
    a = missed_links(settings, args.vault, db, args.pairs, args.seed)
    b = held_out(settings, args.vault, db, args.holdout, args.seed, progress)
    progress.finish()
    print(f"a. missed links ({args.vault})")
    for key, value in a.items():
        print(f"   {key:<28} {value}")
    print(f"b. held-out links ({args.holdout:.0%} of note-to-note link pairs removed)")
    for key, value in b.items():
        print(f"   {key:<28} {value}")
    print(f"\n{time.monotonic() - started:.0f} s; rerun: .venv/bin/python bench/link_eval.py {args.vault}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
