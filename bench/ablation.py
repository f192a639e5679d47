"""The search-quality ablation: one row per lever, every development set, every category.

    .venv/bin/python bench/ablation.py --golden ../shared/eval/obsidian-help-de/golden.json \
        --vault ../shared/eval/obsidian-help-de/vault --golden-db /tmp/helpde.db \
        [--beir ../shared/eval/xquad-r-de/sentences --beir-db /tmp/xq.db [--split test]] \
        [--links-db /tmp/helpde.db] [--levers shipped,no-graph,...]

Each database is a scratch index that `mindtui eval ... --scratch-db PATH` built (and embedded)
first with this code (anchor rows are written at import); this script only reads it. Levers
that are not settings of the shipped code are applied here, on top of the engine, so a lever is
measured before anyone writes it into the product:

    before       the defaults before this work (anchor_text off)
    shipped      the shipped defaults (golden: hybrid + graph expansion; BEIR, links: hybrid)
    no-anchor    shipped without anchor text (search.anchor_text false)
    no-graph     graph expansion off
    alpha-0.7    convex_alpha 0.7 (the vector list's share up from 0.5)
    rrf          reciprocal rank fusion instead of convex
    coord-alpha  query-dependent fusion: the vector share grows from 0.5 to 0.9 as the best
                 full-text chunk matches fewer of the query's words ((1 - coordination)^2)
    note-vector  an extra vector per note (title, aliases, headings, first paragraph); a note's
                 vector score is its best passage
    anchor-vector  an extra vector per note from the lines other notes link to it with
    idf-alpha    query-dependent fusion: the vector share grows from 0.5 to 1.0 as the best full-text
                 chunk holds less of the query's IDF weight (0.5 + 0.5 (1 - share)^2): full text
                 that matched only common words should not dilute the vectors
    vector-prf   pseudo-relevance feedback for the vector list: the query vector moves towards
                 the best-matching chunk vectors of the hybrid top 3 (q + 0.3 mean), then fuses again
    multi-chunk  a note's full-text score from its three best chunks (best + 0.2 second + 0.04
                 third) instead of the single best
    ceiling      not a lever: per query the best of vector shares 0, 0.2, ..., 1.0, chosen with the
                 judgments. No query-dependent fusion of these lists can score more.

Levers that were measured and not kept run on the shipped defaults plus the lever.

Queries run query-major (every lever for one query, then the next), so the embedder's query
cache embeds each query once. Prints one table per set: the headline metric overall and per
category, and Hit@1 for golden sets.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from pathlib import Path
from statistics import fmean

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mindtui.config import load_settings  # noqa: E402
from mindtui.evaluation import runs, workspace  # noqa: E402
from mindtui.evaluation.commands import load_golden  # noqa: E402
from mindtui.evaluation.metrics import METRICS  # noqa: E402
from mindtui.search.engine import SearchOptions, make_search_engine  # noqa: E402
from mindtui.search.query import german_prefix, parse_query  # noqa: E402
from mindtui.store import open_database  # noqa: E402
from mindtui.store import notes as note_store  # noqa: E402
from mindtui.store import search_store  # noqa: E402
from mindtui.store.search_store import ChunkHit  # noqa: E402
from mindtui.text import analysis  # noqa: E402

LEVERS = ["before", "shipped", "no-anchor", "no-graph", "alpha-0.7", "rrf", "coord-alpha", "idf-alpha",
          "vector-prf", "multi-chunk", "note-vector", "anchor-vector", "ceiling"]
CEILING_ALPHAS = (0.0, 0.2, 0.35, 0.5, 0.65, 0.8, 1.0)
INDEX_LEVERS = {"note-vector", "anchor-vector"}  # need a vault's links and headings
SETTINGS = {"before": {"anchor_text": False}, "no-anchor": {"anchor_text": False},
            "alpha-0.7": {"convex_alpha": 0.7}, "rrf": {"fusion": "rrf"}}
WIKILINK = re.compile(r"!?\[\[([^\]|#]*)(?:#[^\]|]*)?(?:\|([^\]]*))?\]\]")


def plain(text: str) -> str:
    """Wikilinks as the words a reader sees ([[Target|label]] -> label), markup dropped."""
    text = WIKILINK.sub(lambda m: m.group(2) or m.group(1), text)
    return re.sub(r"[*_`>|]+", " ", text).strip()


def anchor_lines(conn) -> dict[str, list[str]]:
    """note_id -> the distinct lines in which other notes link to it."""
    lines: dict[str, list[str]] = {}
    for target, evidence in conn.execute(
            "SELECT resolved_note_id, evidence FROM note_links WHERE resolution = 'resolved'"
            " AND resolved_note_id != note_id ORDER BY note_id, seq"):
        text = plain(evidence)
        if text and text not in lines.setdefault(target, []):
            lines[target].append(text)
    return lines


def note_passages(conn) -> dict[str, str]:
    """note_id -> title (and aliases), its headings, its first paragraph."""
    out = {}
    for note_id, title, aliases in conn.execute("SELECT note_id, title, aliases FROM notes"):
        chunks = conn.execute("SELECT heading_path, text FROM chunks WHERE note_id = ? ORDER BY seq",
                              (note_id,)).fetchall()
        headings: list[str] = []
        for path, _ in chunks:
            headings += [h for h in path.split(" > ") if h and h not in headings]
        paragraphs = chunks[0][1].split("\n\n") if chunks else []
        first = next((p for p in paragraphs if p.strip() and not p.lstrip().startswith(("#", "|", "!"))), "")
        names = ", ".join([title, *json.loads(aliases)])
        out[note_id] = f"{plain(names)}\n{'; '.join(headings)}\n{plain(first)}"[:1500]
    return out


_EMBEDDED: dict[tuple[str, str], tuple[list[str], np.ndarray]] = {}  # (db, lever) -> note ids, vectors


class ExtraPassages:
    """Extra vectors per note beside its chunk vectors; a note's vector score is its best passage."""

    def __init__(self, engine, key: tuple[str, str], texts: dict[str, str]) -> None:
        self.engine = engine
        if key not in _EMBEDDED:  # the golden set and the linked-pair test share an index
            ids = list(texts)
            _EMBEDDED[key] = ids, engine.models.embedder(wait=True).embed_passages([texts[n] for n in ids])
        self.ids, self.vectors = _EMBEDDED[key]
        self.original = engine._vector

    def __call__(self, options, pool, query_vector):
        hits = self.original(options, pool, query_vector)
        found = query_vector()
        if found is None:
            return hits
        best = {h.note_id: h for h in hits}
        for note_id, similarity in zip(self.ids, self.vectors @ found[1]):
            similarity = float(similarity)
            if similarity >= self.engine.options.min_cosine and similarity > getattr(best.get(note_id), "score", -1):
                chunk = best[note_id].chunk_id if note_id in best else None
                best[note_id] = ChunkHit(chunk, note_id, similarity)
        return sorted(best.values(), key=lambda h: (-h.score, h.note_id))[:pool]


def coordination(engine, conn, query: str) -> float:
    """Share of the query's words that the best full-text chunk contains."""
    hits = engine._fts(parse_query(query), SearchOptions(log=False), 1)
    groups = []
    for word in parse_query(query).terms:
        terms = {f'"{s}"' for s in analysis.stem_all_languages(word)}
        prefix = german_prefix(word)
        if prefix:
            terms.add(f'"{prefix}"*')
        groups.append(" OR ".join(sorted(terms)))
    if not hits or not groups:
        return 0.0
    found = sum(1 for expression in groups if conn.execute(
        "SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid = ?", (expression, hits[0].chunk_id)).fetchone())
    return found / len(groups)


def idf_share(conn, query: str, chunk_id: int) -> float:
    """Share of the query's IDF weight (over chunks) that one chunk holds."""
    (total,) = conn.execute("SELECT count(*) FROM chunks").fetchone()
    weights, held = 0.0, 0.0
    for word in dict.fromkeys(parse_query(query).terms):
        expression = parse_query(word).fts
        if not expression:
            continue
        (df,) = conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (expression,)).fetchone()
        idf = np.log((total - df + 0.5) / (df + 0.5) + 1.0)
        weights += idf
        if conn.execute("SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid = ?",
                        (expression, chunk_id)).fetchone():
            held += idf
    return held / weights if weights else 0.0


def multi_chunk_fts(engine):
    """engine._fts with a note's score from its three best chunks (BM25: lower is better)."""
    def fts(query, options, pool):
        if query.fts is None:
            return []
        chunks: dict[str, list[ChunkHit]] = {}
        for hit in search_store.fts_chunks(engine.conn, query.fts, pool * 4):
            chunks.setdefault(hit.note_id, []).append(hit)
        notes = [ChunkHit(hits[0].chunk_id, note_id, sum(0.2 ** i * h.score for i, h in enumerate(hits[:3])))
                 for note_id, hits in chunks.items()]
        return sorted(notes, key=lambda h: (h.score, h.note_id))[:pool]
    return fts


class FedBackVector:
    """engine._query_vector moved towards the chunk vectors that best match the query in the
    notes of a first hybrid search's top 3 (Rocchio: q + 0.3 mean, renormalised)."""

    def __init__(self, engine) -> None:
        self.engine, self.original = engine, engine._query_vector

    def __call__(self, query, options, notices):
        found = self.original(query, options, notices)
        if found is None:
            return None
        model_id, vector = found
        self.engine._query_vector = self.original
        try:
            first = self.engine.search(query, dataclasses.replace(options, limit=3, expand=False)).results
        finally:
            self.engine._query_vector = self
        picked = []
        for result in first:
            rows = self.engine.conn.execute(
                "SELECT v.embedding FROM chunk_vectors cv JOIN vec_chunks v ON v.rowid = cv.embedding_id"
                " WHERE cv.note_id = ? AND cv.model_id = ?", (result.note_id, model_id)).fetchall()
            if rows:
                matrix = np.stack([np.frombuffer(r[0], dtype=np.float32) for r in rows])
                picked.append(matrix[int(np.argmax(matrix @ vector))])
        if not picked:
            return found
        moved = vector + 0.3 * np.mean(picked, axis=0)
        return model_id, (moved / np.linalg.norm(moved)).astype(np.float32)


class Lever:
    """A way to search: an engine (with settings), expansion on or off, maybe a patch."""

    def __init__(self, name: str, db: Path, expand_default: bool) -> None:
        self.name, self.expand = name, expand_default and name != "no-graph"
        self.settings = load_settings().with_values({"search": SETTINGS.get(name, {})}, "ablation")
        self.conn = open_database(db, readonly=True)
        self.engine = make_search_engine(self.conn, self.settings)
        if name in ("note-vector", "anchor-vector"):
            titles = dict(self.conn.execute("SELECT note_id, title FROM notes"))
            texts = note_passages(self.conn) if name == "note-vector" else {
                n: f"{titles[n]}\n" + " | ".join(lines)[:1500] for n, lines in anchor_lines(self.conn).items()}
            self.engine._vector = ExtraPassages(self.engine, (str(db), name), texts)
        alphas = {"coord-alpha": (0.5, 0.6, 0.7, 0.8, 0.9), "idf-alpha": (0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
                  "ceiling": CEILING_ALPHAS}.get(name, ())
        self.by_alpha = {a: make_search_engine(self.conn, self.settings.with_values(
            {"search": {"convex_alpha": a}}, "ablation")) for a in alphas}
        if name == "vector-prf":
            self.engine._query_vector = FedBackVector(self.engine)
        if name == "multi-chunk":
            self.engine._fts = multi_chunk_fts(self.engine)

    def search(self, query: str, limit: int) -> list[str]:
        options = SearchOptions(mode="hybrid", limit=limit, log=False, rerank=False, expand=self.expand)
        engine = self.engine
        if self.name == "coord-alpha":
            alpha = 0.5 + 0.4 * (1 - coordination(self.engine, self.conn, query)) ** 2
            engine = self.by_alpha[min(self.by_alpha, key=lambda a: abs(a - alpha))]
        if self.name == "idf-alpha":
            best = [h for h in self.engine._fts(parse_query(query), options, 5) if h.chunk_id is not None]
            share = idf_share(self.conn, query, best[0].chunk_id) if best else 0.0
            alpha = 0.5 + 0.5 * (1 - share) ** 2
            engine = self.by_alpha[min(self.by_alpha, key=lambda a: abs(a - alpha))]
        return [r.path for r in engine.search(query, options).results]

    def candidates(self, query: str, limit: int) -> list[list[str]]:
        """The ceiling row: one ranking per vector share."""
        options = SearchOptions(mode="hybrid", limit=limit, log=False, rerank=False, expand=self.expand)
        return [[r.path for r in engine.search(query, options).results] for engine in self.by_alpha.values()]


def measure(name: str, db: Path, queries: dict, qrels: dict, categories: dict, metric: str, limit: int,
            levers: list[str], vault_set: bool, expand: bool, translate: dict | None = None,
            exclude: dict | None = None) -> dict:
    rows: dict[str, dict] = {}
    built = [Lever(lever, db, expand) for lever in levers if vault_set or lever not in INDEX_LEVERS]
    scores: dict[str, dict] = {lever.name: {} for lever in built}
    for done, (qid, text) in enumerate(queries.items(), start=1):
        for lever in built:
            rankings = lever.candidates(text, limit + 1) if lever.name == "ceiling" else [lever.search(text, limit + 1)]
            best: dict[str, float] = {}
            for ranking in rankings:
                ranked = [(translate or {}).get(p, p) for p in ranking]
                ranked = [p for p in ranked if p != (exclude or {}).get(qid)][:limit]
                measured = {m: METRICS[m](ranked, qrels[qid]) for m in (metric, "hit@1")}
                if not best or measured[metric] > best[metric]:
                    best = measured
            scores[lever.name][qid] = best
        if done % 100 == 0:
            print(f"{name}: {done}/{len(queries)}", file=sys.stderr, flush=True)
    for lever in built:
        lever.conn.close()
    for lever, per_query in scores.items():
        row = {"all": fmean(v[metric] for v in per_query.values()),
               "hit@1": fmean(v["hit@1"] for v in per_query.values())}
        for category in sorted(set(categories.values())):
            row[category] = fmean(per_query[q][metric] for q in per_query if categories[q] == category)
        rows[lever] = row
    return {"set": name, "metric": metric, "rows": rows}


def print_table(table: dict) -> None:
    columns = list(next(iter(table["rows"].values())))
    print(f"\n{table['set']} ({table['metric']}; hit@1 beside it)")
    print(f"{'lever':<14}" + "".join(f"{c[:12]:>13}" for c in columns))
    for lever, row in table["rows"].items():
        print(f"{lever:<14}" + "".join(f"{row[c]:>13.3f}" for c in columns))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--golden", type=Path)
    parser.add_argument("--vault", type=Path)
    parser.add_argument("--golden-db", type=Path)
    parser.add_argument("--beir", type=Path, action="append", default=[])
    parser.add_argument("--beir-db", type=Path, action="append", default=[])
    parser.add_argument("--split", default="test", help="BEIR qrels split (tune on train)")
    parser.add_argument("--links-db", type=Path, help="the golden vault's index again: the linked-pair test")
    parser.add_argument("--levers", default=",".join(LEVERS))
    parser.add_argument("--json", type=Path, help="also write the tables here")
    args = parser.parse_args()
    levers = [lever for lever in args.levers.split(",") if lever]
    unknown = set(levers) - set(LEVERS)
    if unknown:
        parser.error(f"unknown lever(s) {', '.join(sorted(unknown))}; choose from {', '.join(LEVERS)}")
    tables = []
    if args.golden and args.golden_db:
        golden = load_golden(args.golden)
        queries = {g["id"]: g["query"] for g in golden}
        qrels = {g["id"]: {**{p: 0.5 for p in g.get("partial_paths", [])}, **{p: 1.0 for p in g["relevant_paths"]}}
                 for g in golden}
        categories = {g["id"]: g.get("category", "uncategorised") for g in golden}
        tables.append(measure(args.golden.parent.name, args.golden_db, queries, qrels, categories, "ndcg@5", 10,
                              levers, True, True))
    for directory, db in zip(args.beir, args.beir_db):
        beir = workspace.load_beir(directory, args.split)
        taken: set[str] = set()  # note path -> document id, as write_beir_vault names the notes
        translate = {workspace._doc_file_name(doc_id, taken): doc_id for doc_id in sorted(beir.corpus)}
        categories = {q: "all" for q in beir.queries}
        tables.append(measure(f"{directory.name} {args.split}", db, beir.queries, beir.qrels, categories, "ndcg@10",
                              10, levers, False, False, translate=translate))
    if args.links_db and args.vault:
        conn = open_database(args.links_db, readonly=True)
        links = note_store.resolved_link_paths(conn, model_readable_sources=True)
        conn.close()
        queries, qrels, exclude = runs.linked_pair_queries(args.vault, links)
        categories = {q: "all" for q in queries}
        # As `mindtui eval links`: graph expansion and anchor text would reward the links the test hides.
        SETTINGS.update({lever: {**SETTINGS.get(lever, {}), "anchor_text": False} for lever in LEVERS})
        tables.append(measure("links " + args.vault.parent.name, args.links_db, queries, qrels, categories, "hit@10",
                              10, [lever for lever in levers if lever not in ("no-graph", "no-anchor")], True, False,
                              exclude=exclude))
    for table in tables:
        print_table(table)
    if args.json:
        args.json.write_text(json.dumps(tables, indent=1), encoding="utf-8")
    print(f"\nrerun: .venv/bin/python {' '.join(sys.argv)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
