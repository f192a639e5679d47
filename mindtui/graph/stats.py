"""`mindtui graph stats`: how many edges each signal holds and which notes each connects most."""

from __future__ import annotations

import apsw

from mindtui.config import Settings
from mindtui.graph.change_graph import OUTSIDE_PREFIX
from mindtui.store import graph_store

SIGNALS = ("links", "relations", "type_defaults", "change", "search")


def graph_stats(conn: apsw.Connection, settings: Settings, top: int = 5) -> dict:
    confirmed = settings.graph.search_confirmed_weight
    counts = graph_store.signal_counts(conn, confirmed)
    connected: dict[str, list[dict]] = {}
    for signal in SIGNALS:
        rows = graph_store.most_connected(conn, signal, top, confirmed)
        refs = graph_store.notes_by_id(conn, [node for node, _ in rows])
        connected[signal] = [
            {"note_id": node if node in refs else None,
             "path": refs[node].path if node in refs else node.removeprefix(OUTSIDE_PREFIX),
             "title": refs[node].title if node in refs else node.removeprefix(OUTSIDE_PREFIX),
             "neighbours": int(degree)}
            for node, degree in rows if node in refs or node.startswith(OUTSIDE_PREFIX)]  # not deleted notes
    return {"counts": counts, "search_confirmed_weight": confirmed, "most_connected": connected}


def format_stats(stats: dict) -> str:
    counts = stats["counts"]
    lines = ["edges per signal",
             f"  links          {counts['links']:>8}   (explicit wikilinks between indexed notes)",
             f"  relations      {counts['relations']:>8}   (typed: rel: lines, callouts, frontmatter)",
             f"  type_defaults  {counts['type_defaults']:>8}   (rule edges from the type registry)",
             f"  change         {counts['change']:>8}   (note pairs edited in one work session)",
             f"  search pairs   {counts['search_pairs']:>8}   ({counts['search_pairs_confirmed']} confirmed at weight "
             f">= {stats['search_confirmed_weight']}; {counts['searches_logged']} searches logged)"]
    for signal, entries in stats["most_connected"].items():
        if entries:
            lines.append(f"\nmost connected by {signal}" + (" (confirmed pairs)" if signal == "search" else ""))
            lines.extend(f"  {e['neighbours']:>4}  {e['title']}  ({e['path']})" for e in entries)
    return "\n".join(lines)
