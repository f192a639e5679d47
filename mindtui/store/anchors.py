"""Anchor text rows: the lines in which other notes link to a note, as one full-text row of it.

A classic web-search signal every vault has: how the owner refers to a note elsewhere describes
it in other words than its own text. Each note with incoming links from notes that may be read
(neither private nor `ai_processing: none`: their words must not make another note findable by an
agent) gets one row in chunks_fts, rowid = -anchor_id, the analyzed lines in the body column
(BM25 weight 1: weight 3, as a heading, cost the crosslingual queries of the help-de golden set
0.019 nDCG@5; README "How search ranks").
"""

from __future__ import annotations

import hashlib
import json
from typing import Callable

import apsw

from mindtui.store.visibility import open_to_agents
from mindtui.text.analysis import ANALYZER_VERSION

PAGE_NOTES = 2000  # notes whose anchor rows one query refreshes


def incoming_lines(conn: apsw.Connection,
                   only: set[str] | None = None) -> dict[str, tuple[str, list[tuple[str, str]]]]:
    """note_id -> (its language, the (evidence line, target as written) of resolved references
    to it from other readable notes, in order); of the notes in `only` (None: all)."""
    lines: dict[str, tuple[str, list[tuple[str, str]]]] = {}
    limit, args = ("", ()) if only is None else (
        " AND l.resolved_note_id IN (SELECT value FROM json_each(?))", (json.dumps(sorted(only)),))
    rows = conn.execute(
        "SELECT l.resolved_note_id, t.lang, l.evidence, l.target_raw FROM main.note_links l"
        " JOIN main.notes s ON s.note_id = l.note_id JOIN main.notes t ON t.note_id = l.resolved_note_id"
        f" WHERE l.resolution = 'resolved' AND l.resolved_note_id != l.note_id AND {open_to_agents('s')}{limit}"
        " ORDER BY l.resolved_note_id, s.path, l.seq", args)
    for target, lang, evidence, written in rows:
        lines.setdefault(target, (lang, []))[1].append((evidence, written))
    return lines


def outgoing_lines(conn: apsw.Connection, note_id: str) -> tuple[str, list[tuple]] | None:
    """What a note gives the anchor rows of the notes it links to: (its path, the (seq, target
    id, evidence line, target as written) of its resolved references to other notes); None when
    it gives nothing (no such note, or one agents may not read)."""
    row = conn.execute(f"SELECT path FROM main.notes s WHERE note_id = ? AND {open_to_agents('s')}",
                       (note_id,)).fetchone()
    if row is None:
        return None
    return row[0], conn.execute(
        "SELECT seq, resolved_note_id, evidence, target_raw FROM main.note_links WHERE note_id = ?"
        " AND resolution = 'resolved' AND resolved_note_id != note_id ORDER BY seq", (note_id,)).fetchall()


def refresh(conn: apsw.Connection, analyzed: Callable[[list[tuple[str, str]], str], str],
            only: set[str] | None = None) -> int:
    """Bring every note's anchor row up to date (or those of the notes in `only`: the importer
    names the notes whose incoming references or language may have changed); `analyzed(lines,
    lang)` is the row's indexed text. Only rows whose lines (or language) changed are analyzed and
    rewritten: reading every reference is cheap, stemming them all is not (the hub vault: 42k
    lines). Returns how many rows were written or removed. Call inside a transaction.
    Every note's row is refreshed a page of notes at a time: a large vault's every reference line
    is never held at once."""
    if only is not None:
        return _refresh_page(conn, analyzed, only)
    notes = [note_id for (note_id,) in conn.execute(
        "SELECT note_id FROM main.notes UNION SELECT note_id FROM main.note_anchors ORDER BY 1")]
    return sum(_refresh_page(conn, analyzed, set(notes[start:start + PAGE_NOTES]))
               for start in range(0, len(notes), PAGE_NOTES))


def _refresh_page(conn: apsw.Connection, analyzed: Callable[[list[tuple[str, str]], str], str],
                  only: set[str]) -> int:
    current = dict(conn.execute("SELECT note_id, text_hash FROM main.note_anchors"
                                " WHERE note_id IN (SELECT value FROM json_each(?))", (json.dumps(sorted(only)),)))
    wanted = incoming_lines(conn, only)
    changed = 0
    for note_id in current.keys() - wanted.keys():
        conn.execute("DELETE FROM main.note_anchors WHERE note_id = ?", (note_id,))
        changed += 1
    for note_id, (lang, lines) in wanted.items():
        parts = [f"analyzer={ANALYZER_VERSION}", lang, *(f"{line}\t{written}" for line, written in lines)]
        digest = hashlib.sha256("\n".join(parts).encode()).hexdigest()
        if current.get(note_id) == digest:
            continue
        if note_id in current:  # a cold import's every note has none: no delete that finds nothing
            conn.execute("DELETE FROM main.note_anchors WHERE note_id = ?", (note_id,))
        text = analyzed(lines, lang)
        if not text:
            continue
        conn.execute("INSERT INTO main.note_anchors (note_id, text_hash) VALUES (?, ?)", (note_id, digest))
        conn.execute("INSERT INTO main.chunks_fts (rowid, title, headings, body) VALUES (?, '', '', ?)",
                     (-conn.last_insert_rowid(), text))
        changed += 1
    return changed
