"""The fusion tunes itself, carefully: the nightly fits three search settings to the owner's opens.

With at least `search.fit_min_opens` opens in the log, the owner's searches are split by time:
the older 70 % fit, the newest 30 % are held out. Each search is replayed without its own memory
and scored by the reciprocal rank of the notes opened after it (MRR@10). From the current values,
one setting at a time tries every value of its grid on the fitting part and keeps the best; the
result is adopted only if it beats the current values on the held-out part by at least
`search.fit_margin`. Adopted values are stored in `meta` (key search_learnt) and apply to every
later search, except a setting the user set (file, environment, override): that always wins.
"""

from __future__ import annotations

import datetime
import json

from mindtui.config import Settings
from mindtui.search.engine import MODES, SearchEngine, SearchModels, SearchOptions
from mindtui.store import usage_store
from mindtui.store.meta import delete_meta, get_meta_if_any, set_meta

LEARNT_KEY = "search_learnt"
GRID = {"convex_alpha": (0.3, 0.4, 0.5, 0.6, 0.7),
        "graph_expansion_factor": (0.0, 0.1, 0.2, 0.3),
        "memory_weight": (0.5, 1.0, 1.5, 2.0)}
HELD_OUT_SHARE = 0.3


def learnt_values(conn) -> dict:
    """The search settings the nightly fit adopted ({} before any)."""
    stored = get_meta_if_any(conn, LEARNT_KEY)
    return json.loads(stored)["values"] if stored else {}


def forget_learnt(conn) -> bool:
    """The adopted values go (`usage forget` took away opens they were fitted to); the next
    nightly fits again from the opens left. Whether there were any."""
    return delete_meta(conn, LEARNT_KEY)


def apply_learnt(conn, settings: Settings) -> Settings:
    return settings.with_learnt("search", learnt_values(conn))


def fit(conn, settings: Settings, models: SearchModels | None) -> dict:
    """Fit, compare on the held-out opens, adopt or not; returns what was tried, chosen and by how much."""
    searches = _searches(conn)
    opens = sum(len(opened) for _, _, _, opened in searches)
    minimum = settings.search.fit_min_opens
    if opens < minimum or len(searches) < 10:
        return {"fitted": False, "reason": f"{opens} opens, fewer than search.fit_min_opens ({minimum})"}
    settings = apply_learnt(conn, settings)
    cut = int(len(searches) * (1 - HELD_OUT_SHARE))
    fitting, held_out = searches[:cut], searches[cut:]
    current = {key: getattr(settings.search, key) for key in GRID if f"search.{key}" not in settings.chosen}
    best, best_score, tried = dict(current), _mrr(conn, settings, models, current, fitting), []
    for key in current:
        for value in GRID[key]:
            candidate = {**best, key: value}
            if candidate == best:
                continue
            score = _mrr(conn, settings, models, candidate, fitting)
            tried.append({**candidate, "mrr": score})
            if score > best_score + 1e-9:
                best, best_score = candidate, score
    before = _mrr(conn, settings, models, current, held_out)
    after = _mrr(conn, settings, models, best, held_out) if best != current else before
    adopted = best != current and after - before >= settings.search.fit_margin
    if adopted:
        with conn:
            set_meta(conn, LEARNT_KEY, json.dumps({
                "values": {**learnt_values(conn), **best}, "fitted_at": _now(),
                "held_out_mrr": {"before": before, "after": after}}))
    return {"fitted": True, "opens": opens, "searches": len(searches), "held_out_searches": len(held_out),
            "current": current, "tried": tried, "chosen": best if adopted else current, "adopted": adopted,
            "held_out_mrr": {"current": round(before, 4), "fitted": round(after, 4),
                             "gain": round(after - before, 4), "margin": settings.search.fit_margin}}


def _searches(conn) -> list[tuple[int, str, str, set[str]]]:
    """(search_id, query, mode, notes opened after it), oldest first."""
    out: dict[int, tuple[int, str, str, set[str]]] = {}
    for search_id, _at, query, mode, note_id, _rank in usage_store.owner_opens(conn):
        out.setdefault(search_id, (search_id, query, mode if mode in MODES else "hybrid", set()))[3].add(note_id)
    return [out[k] for k in sorted(out)]


def _mrr(conn, settings: Settings, models, values: dict, searches) -> float:
    engine = SearchEngine(conn, settings.with_learnt("search", values), models)
    total = 0.0
    for search_id, query, mode, opened in searches:
        options = SearchOptions(mode=mode, limit=10, log=False, rerank=False, kind="notes", memory_exclude=search_id)
        ranked = [r.note_id for r in engine.search(query, options).results]
        total += next((1.0 / rank for rank, note in enumerate(ranked, start=1) if note in opened), 0.0)
    return round(total / len(searches), 6) if searches else 0.0


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
