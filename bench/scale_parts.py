"""The measurements of bench/scale_bench.py (issue 21), one function per item; each returns Figures."""

from __future__ import annotations

import json
import random
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))

K = 50
WARM_QUERIES = 5  # held-out queries the KNN figures run untimed first
KEYSTROKE_LIMIT = 20  # tui/search_screen.RESULT_LIMIT: one page of results per keystroke


@dataclass
class Figure:
    item: str
    name: str
    value: float | int | str
    target: str
    ok: bool | None  # None: reported, no target
    command: str


def p50_p95(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def run_json(*args: str) -> dict:
    """A child process that prints one JSON line last (its own peak RSS is then its own)."""
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args[:2])} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def make_vault(source: Path, notes: int, seed: int, out: Path) -> Path:
    """The generated vault, made once per (notes, seed) under the work folder."""
    if not (out / ".complete").exists():
        shutil.rmtree(out, ignore_errors=True)
        subprocess.run([sys.executable, str(BENCH / "make_vault.py"), str(notes), "--seed", str(seed),
                        "--source", str(source), "--out", str(out)], check=True, stdout=subprocess.DEVNULL)
        (out / ".complete").write_text("")
    return out


# -- item 5: import ----------------------------------------------------------------------------

def import_figures(vault: Path, db: Path, rerun: str) -> list[Figure]:
    from import_bench import warm_page_cache

    db.unlink(missing_ok=True)
    for suffix in ("-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    warm_page_cache(vault)
    base = run_json(str(BENCH / "import_bench.py"), "--baseline", str(vault))
    cold = run_json(str(BENCH / "import_bench.py"), "--import", str(vault), str(db))
    again = run_json(str(BENCH / "import_bench.py"), "--import", str(vault), str(db))
    touched = indexed_files(vault, db)  # not a file the import leaves out (Templates/**): its edit changes no note
    touched = touched[::max(1, len(touched) // 100)][:100]
    for path in touched:
        with path.open("a", encoding="utf-8") as handle:
            handle.write("\nOne more line, written by bench/scale_bench.py.\n")
    warm_page_cache(vault)
    touch = run_json(str(BENCH / "import_bench.py"), "--import", str(vault), str(db))
    ratio = cold["seconds"] / base["seconds"]
    notes = cold["notes_total"]
    return [
        Figure("5", f"cold import, {notes:,} notes ({cold['chunks_total']:,} chunks): x markdown-it baseline "
               f"({cold['seconds']:.0f} s / {base['seconds']:.0f} s; CPU {cold['cpu'] / base['cpu']:.2f}x, its"
               f" workers' included)", round(ratio, 2), "<= 1.5", ratio <= 1.5, rerun),
        Figure("5", f"cold import peak RSS, MB (the importer {cold['importer_mb']:.0f}, each worker at most"
               f" {cold['worker_mb']:.0f})", round(cold["peak_mb"]), "< 1024", cold["peak_mb"] < 1024, rerun),
        Figure("5", "no-change re-run, s", round(again["seconds"], 2), "<= 10", again["seconds"] <= 10
               and again["notes_unchanged"] == notes, rerun),
        Figure("5", f"re-run touching {len(touched)} notes, s ({touch['notes_changed']} changed, "
               f"{touch['notes_relinked']} others relinked)", round(touch["seconds"], 2), "<= 5",
               touch["seconds"] <= 5 and touch["notes_changed"] == len(touched), rerun),
        Figure("5", "re-run peak RSS, MB", round(max(again["peak_mb"], touch["peak_mb"])), "< 1024",
               max(again["peak_mb"], touch["peak_mb"]) < 1024, rerun),
    ]


def indexed_files(vault: Path, db: Path) -> list[Path]:
    from mindtui.store import open_database

    conn = open_database(db, readonly=True)
    try:
        return [vault / path for (path,) in conn.execute("SELECT path FROM notes ORDER BY path")]
    finally:
        conn.close()


# -- the vector fixture in a database ----------------------------------------------------------

def fill_vectors(db: Path, real_db: Path, total: int, seed: int, model_id: str) -> tuple[np.ndarray, np.ndarray]:
    """Give every chunk text of `db` a fixture vector (vector_fixture.mix), padded with vectors of
    no chunk up to `total`, stored under `model_id` as the sweep would. Returns (embedding ids,
    vectors) for the exact ranking."""
    from vector_fixture import mix, real_vectors

    from mindtui.store import open_database, vector_codes
    from mindtui.store import vectors as vector_store
    from mindtui.store.meta import EMBED_REMAINING_KEY, EMBEDDING_MODEL_KEY, set_meta

    conn = open_database(db)
    hashes = [h for (h,) in conn.execute("SELECT DISTINCT content_hash FROM chunks ORDER BY content_hash")]
    hashes += [f"fixture-pad-{i}" for i in range(max(0, total - len(hashes)))]
    vectors = mix(real_vectors(real_db), len(hashes), seed)
    stored = conn.execute("SELECT count(*), count(*) FILTER (WHERE model_id = ?) FROM embeddings", (model_id,)).fetchone()
    if stored != (len(hashes), len(hashes)):  # filled by an earlier run with the same sizes: kept
        with conn:
            conn.execute("DELETE FROM note_embeddings")
            conn.execute("DELETE FROM embeddings")
        for space in (vector_codes.CHUNKS, vector_codes.NOTES):  # their codes went with them
            vector_codes.drop(conn, space)
        for start in range(0, len(hashes), 10_000):
            with conn:
                vector_store.insert_vectors(conn, model_id, hashes[start:start + 10_000],
                                            vectors[start:start + 10_000])
    with conn:
        set_meta(conn, EMBEDDING_MODEL_KEY, model_id)
        set_meta(conn, EMBED_REMAINING_KEY, "0")
    order = {h: i for i, h in enumerate(hashes)}
    ids = np.zeros(len(hashes), dtype=np.int64)
    for embedding_id, content_hash in conn.execute("SELECT embedding_id, content_hash FROM embeddings"):
        ids[order[content_hash]] = embedding_id
    conn.close()
    return ids, vectors


# -- item 2: the product's KNN against numpy exact ---------------------------------------------

def vector_index_upkeep(db: Path, model_id: str) -> dict:
    """The nightly's care of the code index (built once the vectors reach search.ann_min_vectors):
    the searches below run as they would after a nightly."""
    from mindtui.config import load_settings
    from mindtui.store import open_database
    from mindtui.store.vectors import code_index_upkeep

    conn = open_database(db)
    try:
        return code_index_upkeep(conn, load_settings().search, model_id)
    finally:
        conn.close()


def knn_figures(db: Path, ids: np.ndarray, vectors: np.ndarray, queries: np.ndarray, rerun: str) -> list[Figure]:
    from mindtui.config import load_settings
    from mindtui.store import open_database
    from mindtui.store import vectors as vector_store

    def numpy_exact(q):
        scores = vectors @ q
        top = np.argpartition(-scores, K)[:K]
        return set(ids[top].tolist())

    truth, base = [], []
    for q in queries:
        started = time.perf_counter()
        truth.append(numpy_exact(q))
        base.append((time.perf_counter() - started) * 1000)
    conn = open_database(db, readonly=True)
    vector_store.use_code_index(conn, load_settings().search)  # as the service's connections do
    # The first searches of a process read the codes into memory: not what a keystroke waits for.
    for q in queries[:WARM_QUERIES]:
        vector_store.knn(conn, q, K)
    recalls, times = [], []
    for q, expected in zip(queries, truth):
        started = time.perf_counter()
        hits = vector_store.knn(conn, q, K)
        times.append((time.perf_counter() - started) * 1000)
        recalls.append(len({h.embedding_id for h in hits} & expected) / K)
    conn.close()
    b50, b95 = p50_p95(base)
    t50, t95 = p50_p95(times)
    recall = statistics.fmean(recalls)
    where = f"{len(vectors):,} vectors, {len(queries)} held-out real queries"
    return [
        Figure("2", f"store.vectors.knn recall@50 vs exact float ({where})", round(recall, 3), ">= 0.95",
               recall >= 0.95, rerun),
        Figure("2", f"knn p50 / numpy float32 exact p50 ({t50:.1f} / {b50:.1f} ms)", round(t50 / b50, 2), "<= 0.35",
               t50 / b50 <= 0.35, rerun),
        Figure("2", f"knn p95 / numpy exact p50 ({t95:.1f} / {b50:.1f} ms; numpy p95 {b95:.1f})",
               round(t95 / b50, 2), "<= 0.6", t95 / b50 <= 0.6, rerun),
    ]


# -- item 4: suggestions -----------------------------------------------------------------------

def suggestion_figures(db: Path, model_id: str, sample: int, rerun: str) -> list[Figure]:
    """A note's similar notes as the product asks them after a nightly (its maintain step built the
    code indexes: the chunks' and the note vectors'), and the nightly's incremental close pairs."""
    from mindtui.config import load_settings
    from mindtui.graph.suggest import similar_notes
    from mindtui.store import ann, open_database, vector_codes
    from mindtui.store import note_vectors as note_vector_store
    from mindtui.store import vectors as vector_store

    settings = load_settings()
    conn = open_database(db)
    started = time.perf_counter()
    written = note_vector_store.refresh_note_vectors(conn, model_id)
    build_s = time.perf_counter() - started
    started = time.perf_counter()
    again = note_vector_store.refresh_note_vectors(conn, model_id)
    again_s = time.perf_counter() - started
    upkeep = vector_store.code_index_upkeep(conn, settings.search, model_id)
    vector_store.use_code_index(conn, settings.search)
    indexed = [ann.index_for(conn, space) is not None for space in (vector_codes.CHUNKS, vector_codes.NOTES)]
    chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    notes = [n for (n,) in conn.execute("SELECT note_id FROM note_embeddings WHERE chunks > 0 ORDER BY note_id")]
    picked = random.Random(11).sample(notes, min(sample, len(notes)))
    k = settings.graph.suggestions * 4 + 8  # what graph.neighbours.suggestions asks for
    times, cpu = [], []
    for note_id in picked:
        started, cpu_started = time.perf_counter(), time.process_time()
        similar_notes(conn, note_id, model_id, k)
        times.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - cpu_started) * 1000)
    notes_with_vectors = len(notes)
    p50, p95 = p50_p95(times)
    where = "code indexes" if all(indexed) else "exact scans"
    figures = [
        Figure("4", f"a note's similar notes at {chunks:,} chunks ({notes_with_vectors:,} note vectors), p50 ms"
               f" ({len(picked)} notes; one KNN query over the {where}; CPU p50 {p50_p95(cpu)[0]:.0f})",
               round(p50), "<= 200", p50 <= 200, rerun),
        Figure("4", f"a note's similar notes, p95 ms (CPU p95 {p50_p95(cpu)[1]:.0f})", round(p95), "<= 200",
               p95 <= 200, rerun),
        Figure("4", f"note vectors written from scratch, s ({written['computed']:,} notes)", round(build_s, 1), "",
               None, rerun),
        Figure("4", "note vectors refreshed with nothing changed, s (computed "
               f"{again['computed']})", round(again_s, 2), "computes 0", again["computed"] == 0, rerun),
        Figure("4", "code indexes built by the nightly, s (chunks / note vectors; - : built before)",
               f"{upkeep.get('built_s', '-')} / {upkeep['notes'].get('built_s', '-')}", "", None, rerun),
        Figure("4", "code indexes' recall@50 sampled by the nightly (chunks / note vectors)",
               f"{upkeep.get('recall_at_50')} / {upkeep['notes'].get('recall_at_50')}", "", None, rerun),
    ]
    figures += close_pair_figures(conn, model_id, settings, rerun)
    conn.close()
    return figures


def close_pair_figures(conn, model_id: str, settings, rerun: str, changed: int = 100) -> list[Figure]:
    """The nightly's link suggestion work: the close pairs from scratch, again with nothing changed,
    and after `changed` notes' vectors were written again (as an edit would, through the sweep)."""
    from mindtui.curation import close_notes
    from mindtui.curation.suggestions import NEIGHBOURS, LinkSuggestion
    from mindtui.store import close_pairs
    from mindtui.store import note_vectors as note_vector_store

    floor = settings.curation.suggestion_min_cosine

    def timed() -> tuple[float, dict]:
        started = time.perf_counter()
        report = close_notes.refresh_close_pairs(conn, model_id, floor, NEIGHBOURS)
        return time.perf_counter() - started, report

    with conn:  # from scratch on a rerun too
        conn.execute("DELETE FROM meta WHERE key = ?", (close_pairs.SETTINGS_KEY,))
    first_s, first = timed()
    same_s, same = timed()
    notes = [n for (n,) in conn.execute("SELECT note_id FROM note_embeddings WHERE chunks > 0 ORDER BY note_id")]
    edited = random.Random(13).sample(notes, min(changed, len(notes)))
    with conn:  # their chunks "changed": the sweep writes their vectors (and codes) again
        conn.executemany("UPDATE note_embeddings SET source_key = 'bench-edited', stale = 1 WHERE note_id = ?",
                         ((n,) for n in edited))
    note_vector_store.refresh_note_vectors(conn, model_id)
    edited_s, after = timed()
    pairs = conn.execute("SELECT count(*) FROM note_close_pairs").fetchone()[0]
    started, cpu_started = time.perf_counter(), time.process_time()
    cards = LinkSuggestion().detect(conn, settings, {})
    detect_s, detect_cpu = time.perf_counter() - started, time.process_time() - cpu_started
    return [
        Figure("4", f"nightly close pairs from scratch, s ({first['changed']:,} notes, {pairs:,} pairs)",
               round(first_s, 1), "", None, rerun),
        Figure("4", f"nightly close pairs with nothing changed, s (looked up {same['changed'] + same['neighbours']})",
               round(same_s, 2), "looks up 0", same["changed"] + same["neighbours"] == 0, rerun),
        Figure("4", f"nightly close pairs after {len(edited)} notes' vectors changed, s (looked up"
               f" {after['changed']} + {after['neighbours']} neighbours)", round(edited_s, 1),
               f"looks up {len(edited)} + neighbours", after["changed"] == len(edited), rerun),
        Figure("4", f"link suggestion candidates then, s ({len(cards)} for curation.max_new_suggestions"
               f" {settings.curation.max_new_suggestions}; CPU {detect_cpu:.1f} s)", round(detect_s, 1), "", None,
               rerun),
    ]


# -- item 5: search as you type ----------------------------------------------------------------

def keystroke_queries(db: Path, count: int, seed: int) -> list[str]:
    """Queries drawn from the vault (search_bench.sample_queries) typed a few letters at a time:
    every prefix of 3 letters or more, every second letter, until `count`."""
    from search_bench import sample_queries

    from mindtui.store import open_database

    conn = open_database(db, readonly=True)
    whole = sample_queries(conn, max(60, count // 4), seed)
    conn.close()
    out: list[str] = []
    for query in whole:
        out += [query[:end] for end in range(3, len(query) + 1, 2)] + [query]
    rng = random.Random(seed)
    return rng.sample(out, min(count, len(out)))


def search_figures(db: Path, count: int, seed: int, rerun: str, hybrid: bool = True) -> list[Figure]:
    from mindtui.audience import Audience
    from mindtui.config import load_settings
    from mindtui.service import SearchOptions, Service

    typed = keystroke_queries(db, count, seed)
    settings = load_settings().with_overrides(db=str(db))
    figures = []
    with Service(settings, audience=Audience.OWNER) as service:
        modes = [("fts", "as you type (fts, limit 20, per keystroke)", 150)]
        if hybrid:
            modes.append(("hybrid", "hybrid (real query embedding + fixture vectors)", 400))
        for mode, label, target in modes:
            options = SearchOptions(mode=mode, limit=KEYSTROKE_LIMIT, log=False)
            service.search("warm up", options)
            times, cpu = [], []
            for query in typed:
                started, cpu_started = time.perf_counter(), time.process_time()
                service.search(query, options)
                times.append((time.perf_counter() - started) * 1000)
                cpu.append((time.process_time() - cpu_started) * 1000)
            p50, p95 = p50_p95(times)
            figures.append(Figure("5", f"search {label} p95 ms ({len(typed)} queries, p50 {p50:.0f};"
                                  f" CPU p95 {p50_p95(cpu)[1]:.0f})",
                                  round(p95), f"<= {target}", p95 <= target, rerun))
    # The rows the fts mode asks for (search.engine._fts: four per candidate note).
    same, asked = whole_query_agreement(db, typed, max(settings.search.candidate_pool, KEYSTROKE_LIMIT) * 4)
    figures.append(Figure("5", "as-you-type answers (the full-text rows asked) equal to the whole query's"
                               " ranking of every row", f"{same}/{asked}", "all", same == asked, rerun))
    return figures


def whole_query_agreement(db: Path, typed: list[str], limit: int) -> tuple[int, int]:
    """How many of the typed queries' ranked full-text rows (store.fts_split: champion lists,
    splits) are the whole query's ranking of every row by FTS5: the same rows, in the same order,
    the scores to 1e-12. The query is the one the owner's fts_chunks ranks (weightless words out)."""
    from mindtui.search.query import parse_query
    from mindtui.store import fts_parallel, fts_split, fts_weightless, open_database

    conn = open_database(db, readonly=True)
    same = asked = 0
    try:
        def whole(expression: str, count: int):
            return fts_parallel.ranked(conn, "bm25(chunks_fts, 5.0, 3.0, 1.0)", expression, count)

        for text in typed:
            expression = parse_query(text).fts
            if not expression:
                continue
            expression = fts_weightless.without_weightless(conn, expression) or expression
            fts_weightless.kept_answers(conn).clear()
            got, expected = fts_split.ranked(conn, expression, limit, whole), whole(expression, limit)
            asked += 1
            same += [r for r, _ in got] == [r for r, _ in expected] and all(
                abs(a - b) <= 1e-12 * abs(b) for (_, a), (_, b) in zip(got, expected))
    finally:
        conn.close()
    return same, asked


# -- item 6: embedding within a budget ----------------------------------------------------------

def sweep_child(db: str, budget: str) -> None:
    """(child) The real model's sweep with a budget; prints its report and peak RSS as JSON."""
    import resource

    from mindtui.config import load_settings
    from mindtui.models.holder import ModelHolder
    from mindtui.models.sweep import run_embed_sweep
    from mindtui.store import open_database

    settings = load_settings()
    embedder = ModelHolder().embedder(settings)
    conn = open_database(db)
    report = run_embed_sweep(conn, embedder, batch_size=settings.models.embed_batch, budget_s=float(budget))
    newest = conn.execute(
        "SELECT count(*) FROM notes n WHERE EXISTS (SELECT 1 FROM chunks c JOIN embeddings e"
        " ON e.content_hash = c.content_hash WHERE c.note_id = n.note_id) AND n.mtime_ns < ("
        " SELECT max(m.mtime_ns) FROM notes m WHERE NOT EXISTS (SELECT 1 FROM chunks c JOIN embeddings e"
        " ON e.content_hash = c.content_hash WHERE c.note_id = m.note_id))").fetchone()[0]
    conn.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({**report.as_dict(), "older_than_unembedded": newest, "peak_mb": peak}))


def copy_database(source: Path, target: Path) -> None:
    """A consistent copy (SQLite's backup API: the WAL's pages included)."""
    from mindtui.store import open_database

    for suffix in ("", "-wal", "-shm"):
        Path(str(target) + suffix).unlink(missing_ok=True)
    conn = open_database(source, readonly=True)
    try:
        conn.execute("VACUUM INTO ?", (str(target),))
    finally:
        conn.close()


def embed_figures(import_db: Path, work: Path, budget: float, rerun: str) -> list[Figure]:
    db = work / "embed-budget.db"
    copy_database(import_db, db)
    done = run_json(str(BENCH / "scale_bench.py"), "--sweep-child", str(db), str(budget))
    over = done["seconds"] - budget
    return [
        Figure("6", f"embed --budget {budget:g}: seconds past the budget ({done['embedded']} texts, "
               f"{done['remaining']:,} remain, ETA {done['eta_s']} s)", round(over, 1), "<= 5 (one batch)",
               over <= 5 and done["stopped_by_budget"] and done["eta_s"] is not None, rerun),
        Figure("6", "embedded notes older than a note left for later (most recent first)",
               done["older_than_unembedded"], "0", done["older_than_unembedded"] == 0, rerun),
        Figure("6", "sweep peak RSS, MB (model included)", round(done["peak_mb"]), "< 1024",
               done["peak_mb"] < 1024, rerun),
    ]


# -- item 7: maintenance -------------------------------------------------------------------------

def maintenance_figures(db: Path, rerun: str) -> list[Figure]:
    """The nightly's maintain step on the store (jobs.runner.maintain_step, its vector index
    upkeep measured on its own): FTS5 optimize, PRAGMA optimize, anchor texts kept, champion lists."""
    from mindtui.store import fts_champions, maintenance, open_database
    from mindtui.store.anchors import fill_indexed
    from mindtui.vault.links import anchor_text

    conn = open_database(db)
    started = time.perf_counter()
    result = maintenance.optimize(conn)
    optimized = time.perf_counter()
    fill_indexed(conn, anchor_text)
    lists = fts_champions.build(conn)
    listed = time.perf_counter()
    notes, chunks = conn.execute("SELECT (SELECT count(*) FROM notes), (SELECT count(*) FROM chunks)").fetchone()
    db_bytes = maintenance.store_bytes(conn)
    conn.close()
    return [
        Figure("7", f"maintenance step (FTS5 optimize + PRAGMA optimize), s ({chunks:,} chunks)",
               round(optimized - started, 1), "", None, rerun),
        Figure("7", f"full-text champion lists made, s ({lists['champion_phrases']} phrases,"
                    f" {lists['champion_rows']:,} rows)", round(listed - optimized, 1), "", None, rerun),
        Figure("7", "database bytes per note", round(db_bytes / max(notes, 1)), "", None, rerun),
        Figure("7", "database bytes per chunk", round(db_bytes / max(chunks, 1)), "", None, rerun),
    ]
