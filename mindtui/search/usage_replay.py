"""The owner's own measure of usage memory: logged searches with opens, searched again now.

Each search is replayed against today's ranking without its own memory (its own opens would
trivially lift what it opened) and scored by where the notes opened after it land: first
(hit@1) and within the top 5. Over time (per month of the search) this says whether search gets
better the longer it is used. `mindtui eval usage` prints it (with memory off beside it); the
nightly graph step keeps the memory figures in its report (the TUI's Jobs history shows them).
"""

from __future__ import annotations

from mindtui.search.engine import MODES, SearchEngine, SearchOptions
from mindtui.store import usage_store

LIMIT = 10
VARIANTS = {"memory": True, "no_memory": False}


def replay(engine: SearchEngine, variants: tuple[str, ...] = ("memory", "no_memory")) -> dict:
    """{"searches", "opens", <variant>: {"hit@1", "hit@5"}, "months": [...], "rows": [...]}."""
    opens = usage_store.owner_opens(engine.conn)
    by_search: dict[int, dict] = {}
    for search_id, searched_at, query, mode, note_id, _rank in opens:
        entry = by_search.setdefault(search_id, {"at": searched_at, "query": query, "mode": mode, "opened": set()})
        entry["opened"].add(note_id)
    rows = []
    for search_id, entry in sorted(by_search.items()):
        row = {"search_id": search_id, "month": entry["at"][:7], "query": entry["query"]}
        for name in variants:
            options = SearchOptions(mode=entry["mode"] if entry["mode"] in MODES else "hybrid", limit=LIMIT,
                                    log=False, rerank=False, kind="notes", memory=VARIANTS[name],
                                    memory_exclude=search_id)
            ranked = [r.note_id for r in engine.search(entry["query"], options).results]
            row[name] = {"hit@1": float(bool(entry["opened"] & set(ranked[:1]))),
                         "hit@5": float(bool(entry["opened"] & set(ranked[:5])))}
        rows.append(row)
    months = sorted({r["month"] for r in rows})
    return {"searches": len(rows), "opens": len(opens), **_summary(rows, variants),
            "months": [{"month": m, "searches": sum(r["month"] == m for r in rows),
                        **_summary([r for r in rows if r["month"] == m], variants)} for m in months],
            "rows": rows}


def _summary(rows: list[dict], variants: tuple[str, ...]) -> dict:
    return {name: {metric: round(sum(r[name][metric] for r in rows) / len(rows), 4) if rows else 0.0
                   for metric in ("hit@1", "hit@5")} for name in variants}
