"""The three evaluations behind `mindtui eval`: a BEIR set, a golden set for a vault, the linked-pair test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from mindtui.config import Settings
from mindtui.evaluation import runs, workspace
from mindtui.evaluation.workspace import EvalInputError
from mindtui.progress import StepProgress
from mindtui.search.engine import make_search_engine
from mindtui.store import notes as note_store
from mindtui.store import open_database

BEIR_METRICS = ["ndcg@10", "mrr@10", "recall@10", "recall@100"]
GOLDEN_METRICS = ["ndcg@5", "ndcg@10", "mrr", "hit@1", "hit@3", "hit@5", "recall@10"]
LINKED_METRICS = ["hit@10", "recall@10"]
GOLDEN_CATEGORY = "uncategorised"


def default_systems(settings: Settings, with_graph: bool) -> list[str]:
    from mindtui.models.files import reranker_path

    names = ["fts", "vector", "hybrid"] + (["hybrid+graph"] if with_graph else [])
    return names + (["hybrid+rerank"] if reranker_path(settings) is not None else [])


def _search_settings(settings: Settings) -> dict:
    return {key: getattr(settings.search, key) for key in
            ("fusion", "rrf_k", "rrf_weights", "convex_alpha", "convex_normalisation", "candidate_pool", "min_cosine",
             "graph_expansion", "graph_expansion_factor")}


def eval_beir(settings: Settings, directory: Path, *, systems: list[str] | None, max_queries: int | None,
              split: str, scratch: Path | None, db_path: Path | None, progress: StepProgress,
              message: Callable[[str], None], holder=None) -> dict:
    beir = workspace.load_beir(directory, split)
    vault, default_db = workspace.beir_workspace(settings, directory, scratch)
    db_path = db_path or default_db
    message(f"eval: {beir.name}: {len(beir.corpus):,} documents, {len(beir.queries):,} judged queries; "
            f"scratch index {db_path}")
    path_to_doc = workspace.write_beir_vault(beir, vault)
    workspace.prepare_vault(settings, vault, db_path, progress, message, holder=holder)
    # Recall@100 needs 100 candidates from each retriever, whatever the configured pool.
    settings = settings.with_values({"search": {"candidate_pool": max(settings.search.candidate_pool, 100)}})
    query_ids = sorted(beir.queries)[:max_queries] if max_queries else sorted(beir.queries)
    queries = {q: beir.queries[q] for q in query_ids}
    qrels = {q: beir.qrels[q] for q in query_ids}
    result = _run(settings, db_path, systems or default_systems(settings, with_graph=False), queries, qrels,
                  BEIR_METRICS, 100, progress, translate=path_to_doc, holder=holder)
    return {"kind": "beir", "source": str(directory), "documents": len(beir.corpus), "queries": len(queries),
            "search": _search_settings(settings), **result}


def read_json(path: Path):
    """A JSON file's content; an unreadable or malformed file is an EvalInputError naming it."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise EvalInputError(f"{path}: cannot read ({exc})") from exc
    except json.JSONDecodeError as exc:
        raise EvalInputError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from exc


def load_golden(path: Path) -> list[dict]:
    data = read_json(path)
    if not isinstance(data, list):
        raise EvalInputError(f"{path}: expected a JSON list of queries")
    if not data:
        raise EvalInputError(f"{path}: no queries: nothing to measure")
    seen: set[str] = set()
    for number, item in enumerate(data, start=1):
        check_judged_entry(path, number, item)
        item.setdefault("id", f"q{number}")
        if not isinstance(item["id"], str) or not item["id"]:
            raise EvalInputError(f"{path}: entry {number}: \"id\" must be a non-empty string, not {item['id']!r}")
        if item["id"] in seen:
            raise EvalInputError(f"{path}: duplicate id {item['id']!r}")
        seen.add(item["id"])
    return data


def check_judged_entry(path: Path, number: int, item) -> None:
    """A query entry of a golden (or repeat) file: a "query" string, "relevant_paths" a non-empty
    list of paths and "partial_paths", if given, a list of them (a bare string was read letter by letter)."""
    if not isinstance(item, dict) or not isinstance(item.get("query"), str) or not item.get("relevant_paths"):
        raise EvalInputError(f"{path}: entry {number} needs a \"query\" and non-empty \"relevant_paths\"")
    for key in ("relevant_paths", "partial_paths"):
        paths = item.get(key, [])
        if not isinstance(paths, list) or not all(isinstance(p, str) and p for p in paths):
            raise EvalInputError(f"{path}: entry {number}: \"{key}\" must be a list of vault paths")


def check_indexed(source: Path, items: list[dict], vault: Path, indexed: set[str]) -> None:
    """Every judged path of the entries is a note indexed from the vault (EvalInputError otherwise)."""
    missing = sorted({p for item in items for p in item["relevant_paths"] + item.get("partial_paths", [])
                      if p not in indexed})
    if missing:
        raise EvalInputError(f"{source}: paths not indexed from {vault}: {', '.join(missing[:5])}"
                             + (f" and {len(missing) - 5} more" if len(missing) > 5 else ""))


def eval_golden(settings: Settings, golden_path: Path, vault: Path, *, systems: list[str] | None,
                scratch: Path | None, db_path: Path | None, progress: StepProgress,
                message: Callable[[str], None], holder=None) -> dict:
    golden = load_golden(golden_path)
    db_path, indexed = _prepared(settings, vault, scratch, db_path, progress, message, note_store.indexed_paths,
                                 holder)
    check_indexed(golden_path, golden, vault, indexed)
    queries = {item["id"]: item["query"] for item in golden}
    qrels = {item["id"]: {**{p: 0.5 for p in item.get("partial_paths", [])},
                          **{p: 1.0 for p in item["relevant_paths"]}} for item in golden}
    categories = {item["id"]: item.get("category") or GOLDEN_CATEGORY for item in golden}
    result = _run(settings, db_path, systems or default_systems(settings, with_graph=True), queries, qrels,
                  GOLDEN_METRICS, 10, progress, categories=categories, holder=holder)
    return {"kind": "golden", "source": str(golden_path), "vault": str(vault), "queries": len(queries),
            "search": _search_settings(settings), **result}


def eval_links(settings: Settings, vault: Path, *, systems: list[str] | None, sample: int | None,
               scratch: Path | None, db_path: Path | None, progress: StepProgress,
               message: Callable[[str], None], holder=None) -> dict:
    # A linking note's own text is the query: a note that no model may read is not one.
    db_path, links = _prepared(settings, vault, scratch, db_path, progress, message,
                               lambda conn: note_store.resolved_link_paths(conn, model_readable_sources=True), holder)
    queries, qrels, exclude = runs.linked_pair_queries(vault, links, sample)
    if not queries:
        raise EvalInputError(f"{vault}: no note links to another indexed note; nothing to test")
    # Graph expansion is left out by default: it would reward a note's own links, which is what the test hides.
    # So is anchor text: a linked note's anchor row holds the very lines of the query note that link to it.
    settings = settings.with_values({"search": {"anchor_text": False}}, "eval links")
    result = _run(settings, db_path, systems or default_systems(settings, with_graph=False), queries, qrels,
                  LINKED_METRICS, 10, progress, exclude=exclude, holder=holder)
    return {"kind": "links", "vault": str(vault), "queries": len(queries), "search": _search_settings(settings),
            **result}


def _prepared(settings: Settings, vault: Path, scratch: Path | None, db_path: Path | None,
              progress: StepProgress, message: Callable[[str], None], read: Callable, holder=None):
    """Index and embed the vault into its scratch database; return the path and what `read` finds there."""
    db_path = db_path or workspace.vault_db_path(settings, vault, scratch)
    workspace.prepare_vault(settings, vault, db_path, progress, message, holder=holder)
    conn = open_database(db_path, readonly=True)
    try:
        return db_path, read(conn)
    finally:
        conn.close()


def check_systems(systems: list[str] | None) -> None:
    unknown = [s for s in systems or [] if s not in runs.BASE_SYSTEMS]
    if unknown:
        raise EvalInputError(f"unknown system(s) {', '.join(unknown)}; choose from {', '.join(runs.BASE_SYSTEMS)}")


def _run(settings: Settings, db_path: Path, systems: list[str], queries: dict, qrels: dict, metrics: list[str],
         limit: int, progress: StepProgress, *, translate: dict[str, str] | None = None,
         exclude: dict | None = None, categories: dict | None = None, holder=None) -> dict:
    check_systems(systems)
    conn = open_database(db_path, readonly=True)
    try:
        engine = make_search_engine(conn, settings, holder=holder)
        if translate is not None:  # BEIR: note paths back to document ids
            qrels = {q: dict(j) for q, j in qrels.items()}
            engine = _TranslatingEngine(engine, translate)
        return runs.evaluate(engine, systems, queries, qrels, metrics, limit, exclude,
                             progress=lambda done, total, name: progress(f"eval {name}", done, total, ""),
                             categories=categories)
    finally:
        conn.close()


class _TranslatingEngine:
    """Reports BEIR results by document id instead of note path."""

    def __init__(self, engine, path_to_doc: dict[str, str]) -> None:
        self.engine, self.path_to_doc = engine, path_to_doc

    def search(self, query, options):
        response = self.engine.search(query, options)
        for result in response.results:
            result.path = self.path_to_doc.get(result.path, result.path)
        return response


def format_report(report: dict) -> str:
    """The tables `mindtui eval` prints."""
    systems = report["systems"]
    metrics = list(next(iter(systems.values())).keys()) if systems else []
    header = f"{report['kind']}: {report.get('source') or report.get('vault')}  ({report['queries']} queries)"
    lines = [header, _table("system", systems, metrics)]
    for category, per_system in report.get("categories", {}).items():
        lines.append(f"\ncategory {category}")
        lines.append(_table("system", per_system, metrics))
    search = ", ".join(f"{k}={v}" for k, v in report.get("search", {}).items() if v is not None)
    lines.append(f"\nsearch settings: {search}")
    return "\n".join(lines)


def _table(label: str, rows: dict[str, dict[str, float]], metrics: list[str]) -> str:
    width = max([len(label)] + [len(name) for name in rows])
    out = [f"{label.ljust(width)}  " + "  ".join(f"{m:>10}" for m in metrics)]
    for name, values in rows.items():
        out.append(f"{name.ljust(width)}  " + "  ".join(f"{values.get(m, 0.0):>10.4f}" for m in metrics))
    return "\n".join(out)


def format_comparison(before: dict, after: dict, *, names: tuple[str, str] = ("A", "B")) -> str:
    """Two `eval --json` reports side by side: each system's metrics and categories (A → B, change),
    then every query whose score moved, worst loss first, with the rank of its first relevant note."""
    lines = [f"compare {names[0]} → {names[1]}: {before.get('kind')} {before.get('source') or before.get('vault')}"]
    if (before.get("kind"), before.get("source")) != (after.get("kind"), after.get("source")):
        lines.append(f"  (B is {after.get('kind')} {after.get('source') or after.get('vault')})")
    shared = [s for s in before.get("systems", {}) if s in after.get("systems", {})]
    for system in shared:
        lines.append(f"\nsystem {system}")
        rows = {"all": (before["systems"][system], after["systems"][system])}
        for category, per_system in before.get("categories", {}).items():
            if system in per_system and system in after.get("categories", {}).get(category, {}):
                rows[category] = (per_system[system], after["categories"][category][system])
        metrics = list(before["systems"][system])
        width = max(len(label) for label in rows)
        lines.append(" " * width + "  " + "  ".join(f"{m:>22}" for m in metrics))
        for label, (a, b) in rows.items():
            cells = [f"{a.get(m, 0.0):.3f}→{b.get(m, 0.0):.3f} ({b.get(m, 0.0) - a.get(m, 0.0):+.3f})"
                     for m in metrics]
            lines.append(label.ljust(width) + "  " + "  ".join(f"{c:>22}" for c in cells))
        lines.extend(_query_changes(before.get("per_query", {}).get(system, {}),
                                    after.get("per_query", {}).get(system, {})))
    if not shared:
        lines.append("no system in common")
    return "\n".join(lines)


def _query_changes(before: dict, after: dict) -> list[str]:
    if not before or not after:
        return ["  (no per-query rows in one of the reports: made before they were recorded)"]
    metric = next(k for k in next(iter(before.values())) if k not in ("query", "rank", "top", "category"))
    moved = [(after[q][metric] - row[metric], q) for q, row in before.items()
             if q in after and abs(after[q][metric] - row[metric]) > 1e-9]
    if not moved:
        return ["  no query changed"]
    out = [f"  {len(moved)} queries changed ({sum(d > 0 for d, _ in moved)} up, {sum(d < 0 for d, _ in moved)} down);"
           f" {metric}, rank of the first relevant note (0 = not in the list), top result:"]
    for delta, q in sorted(moved):
        a, b = before[q], after[q]
        category = f" [{a['category']}]" if a.get("category") else ""
        out.append(f"  {delta:+.3f} {q}{category} {a[metric]:.3f}→{b[metric]:.3f} rank {a['rank']}→{b['rank']}"
                   f"  {a.get('query', '')!r}  top: {(a['top'] or ['-'])[0]} → {(b['top'] or ['-'])[0]}")
    return out
