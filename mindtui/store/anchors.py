"""Anchor text rows: the lines in which other notes link to a note, as one full-text row of it.

A classic web-search signal every vault has: how the owner refers to a note elsewhere describes
it in other words than its own text. Each note with incoming links from notes that may be read
(neither private nor `ai_processing: none`: their words must not make another note findable by an
agent) gets one row in chunks_fts, rowid = -anchor_id, the analyzed lines in the body column
(BM25 weight 1: weight 3, as a heading, cost the crosslingual queries of the help-de golden set
0.019 nDCG@5; README "How search ranks").

The rows are built as an agent sees the links (store.visibility), for the owner too: a link that
only hidden notes make ambiguous (among one note agents may read and hidden ones) gives its line
to that one note, as it would resolve without them; otherwise a hidden note's existence would
move the visible note's full-text score. Likewise a link whose target agents may not read gives its
line (besides to that target's row, the owner's) to the note a later rule finds, as the vault
without the target resolves it (note_links.fallback: `[[Same]]` to a hidden `Same.md` at the top,
and `folder1/Same.md`). So a row also depends on the other notes such links name: a change of
one's privacy refreshes the others' rows.
"""

from __future__ import annotations

import hashlib
import json
from typing import Callable, Iterable

import apsw

from mindtui.store import notes as note_store
from mindtui.store.notes import LinkRecord
from mindtui.store.visibility import LINK_NOTES_MAX, few_candidates, hidden_by_flags, open_to_agents
from mindtui.text.analysis import ANALYZER_VERSION

PAGE_NOTES = 2000  # notes whose anchor rows one query refreshes


def _sole_open(notes: str) -> str:
    """SQL: the one note agents may read among `notes` (a JSON array of note ids; else NULL)."""
    return (f"(SELECT CASE WHEN count(*) = 1 THEN max(c.note_id) END FROM json_each({notes}) j"
            f" JOIN main.notes c ON c.note_id = j.value WHERE {open_to_agents('c')})")


# SQL: an ambiguous link `l`'s one candidate agents may read when all its others are hidden (else NULL).
_SOLE_OPEN_CANDIDATE = _sole_open("l.candidates")
# SQL: whether agents may read none of ambiguous link `l`'s candidates.
_NONE_OPEN = (f"NOT EXISTS (SELECT 1 FROM json_each(l.candidates) j JOIN main.notes c ON c.note_id = j.value"
              f" WHERE {open_to_agents('c')})")
# SQL: the first of link `l`'s later rules (note_links.fallback) with a note agents may read, or
# standing for many notes (empty: LINK_NOTES_MAX; then no line).
_OPEN_FALLBACK = (f"(SELECT t.value FROM json_each(l.fallback) t WHERE t.value = '[]' OR EXISTS (SELECT 1"
                  f" FROM json_each(t.value) j JOIN main.notes c ON c.note_id = j.value WHERE {open_to_agents('c')})"
                  " ORDER BY t.key LIMIT 1)")


def link_notes(link: LinkRecord) -> tuple[str, ...]:
    """Every note a link may name to some reader: its target, an ambiguous link's candidates, the
    notes of its later rules (note_links.fallback)."""
    candidates = link.candidates if len(link.candidates) <= LINK_NOTES_MAX else ()  # many: no line, ever
    return ((link.resolved_note_id,) if link.resolved_note_id else ()) + candidates + tuple(
        note_id for tier in link.fallback for note_id in tier)


def incoming_lines(conn: apsw.Connection,
                   only: set[str] | None = None) -> dict[str, tuple[str, list[tuple[str, str]]]]:
    """note_id -> (its language, the (evidence line, target as written) of references to it from
    other readable notes, in order: resolved ones, and ambiguous ones it is the sole readable
    candidate of); of the notes in `only` (None: all)."""
    lines: dict[str, tuple[str, list[tuple[str, str]]]] = {}
    limit, args = ("", ()) if only is None else (
        " AND l.target IN (SELECT value FROM json_each(?))", (json.dumps(sorted(only)),))
    arm = ("SELECT l.target, t.lang, l.evidence, l.target_raw, s.path, l.seq FROM {links} l"
           " JOIN main.notes s ON s.note_id = l.note_id JOIN main.notes t ON t.note_id = l.target"
           f" WHERE l.target != l.note_id AND {open_to_agents('s')}{limit}")
    resolved = ("(SELECT note_id, seq, evidence, target_raw, resolved_note_id AS target FROM main.note_links"
                " WHERE resolution = 'resolved')")
    ambiguous = (f"(SELECT l.note_id, l.seq, l.evidence, l.target_raw, {_SOLE_OPEN_CANDIDATE} AS target"
                 f" FROM main.note_links l WHERE l.resolution = 'ambiguous' AND {few_candidates('l')})")
    # A link whose target (or every candidate) agents may not read gives its line as the vault
    # without them would: to the one readable note of its first later rule with one. The hidden
    # target keeps it too (the owner's search): agents never read that row.
    # Read from the hidden notes (their index) for resolved links, from the ambiguous ones (theirs).
    fallback = (f"(SELECT l.note_id, l.seq, l.evidence, l.target_raw, {_sole_open(_OPEN_FALLBACK)} AS target"
                f" FROM main.notes h CROSS JOIN main.note_links l ON l.resolved_note_id = h.note_id"
                f" WHERE {hidden_by_flags('h')} AND l.resolution = 'resolved' AND l.fallback != '[]'"
                f" UNION ALL SELECT l.note_id, l.seq, l.evidence, l.target_raw, {_sole_open(_OPEN_FALLBACK)}"
                f" FROM main.note_links l WHERE l.resolution = 'ambiguous' AND {few_candidates('l')}"
                f" AND l.fallback != '[]' AND {_NONE_OPEN})")
    rows = conn.execute(f"{arm.format(links=resolved)} UNION ALL {arm.format(links=ambiguous)}"
                        f" UNION ALL {arm.format(links=fallback)} ORDER BY 1, 5, 6", args * 3)
    for target, lang, evidence, written, _, _ in rows:
        lines.setdefault(target, (lang, []))[1].append((evidence, written))
    return lines


def given_lines(note_id: str, links: Iterable[LinkRecord]) -> list[tuple]:
    """The (seq, target id, evidence line, target as written) a note's links may give anchor rows:
    a resolved link's to its target, an ambiguous one's to each candidate, either's to the notes
    of its later rules (which ones get it depends on their privacy); never to the note itself."""
    return [(l.seq, target, l.evidence, l.target_raw) for l in links
            if l.resolution in ("resolved", "ambiguous")
            for target in dict.fromkeys(link_notes(l)) if target != note_id]


def outgoing_lines(conn: apsw.Connection, note_id: str) -> tuple[str, list[tuple]] | None:
    """What a note may give the anchor rows of the notes it links to: (its path, its
    given_lines); None when it gives nothing (no such note, or one agents may not read)."""
    row = conn.execute(f"SELECT path FROM main.notes s WHERE note_id = ? AND {open_to_agents('s')}",
                       (note_id,)).fetchone()
    if row is None:
        return None
    return row[0], given_lines(note_id, note_store.links_of(conn, [note_id]).get(note_id, []))


def given_targets(conn: apsw.Connection, note_ids: Iterable[str]) -> set[str]:
    """The notes whose anchor rows these notes' links may give lines to (see given_lines)."""
    return {target for note_id, links in note_store.links_of(conn, note_ids).items()
            for _, target, _, _ in given_lines(note_id, links)}


def _with_namesakes(conn: apsw.Connection, only: set[str]) -> set[str]:
    """`only` and the other notes named by the ambiguous links, and the links with later rules,
    that name one of them (link_notes): whether such a link gives its line to a note depends on
    the privacy of the others."""
    named = ("SELECT l.note_id, l.seq, c.value AS member FROM main.note_links l, json_each(l.candidates) c"
             f" WHERE l.resolution = 'ambiguous' AND {few_candidates('l')}"
             # a link whose later rules stand for many notes (`[[]]`) gives a line only to its target
             " UNION ALL SELECT l.note_id, l.seq, l.resolved_note_id FROM main.note_links l"
             " WHERE l.fallback NOT IN ('[]', '[[]]') AND l.resolved_note_id IS NOT NULL"
             " UNION ALL SELECT l.note_id, l.seq, j.value FROM main.note_links l, json_each(l.fallback) t,"
             " json_each(t.value) j WHERE l.fallback NOT IN ('[]', '[[]]')")
    return only | {note_id for (note_id,) in conn.execute(
        f"WITH named AS MATERIALIZED ({named}) SELECT DISTINCT m.member FROM named m JOIN named o"
        " ON o.note_id = m.note_id AND o.seq = m.seq WHERE o.member IN (SELECT value FROM json_each(?))",
        (json.dumps(sorted(only)),))}


def refresh(conn: apsw.Connection, analyzed: Callable[[list[tuple[str, str]], str], str],
            only: set[str] | None = None) -> int:
    """Bring every note's anchor row up to date (or those of the notes in `only`: the importer
    names the notes whose incoming references or language may have changed); `analyzed(lines,
    lang)` is the row's indexed text. Only rows whose lines (or language) changed are analyzed and
    rewritten: reading every reference is cheap, stemming them all is not (the hub vault: 42k
    lines). Returns how many rows were written or removed. Call inside a transaction.
    Every note's row is refreshed a page of notes at a time: a large vault's every reference line
    is never held at once. `only` takes in the namesakes of its notes (_with_namesakes)."""
    if only is not None:
        return _refresh_page(conn, analyzed, _with_namesakes(conn, only))
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
        digest = _digest(lang, lines)
        if current.get(note_id) == digest:
            continue
        if note_id in current:  # a cold import's every note has none: no delete that finds nothing
            conn.execute("DELETE FROM main.note_anchors WHERE note_id = ?", (note_id,))
        text = analyzed(lines, lang)
        if not text:
            continue
        conn.execute("INSERT INTO main.note_anchors (note_id, text_hash, indexed) VALUES (?, ?, ?)",
                     (note_id, digest, text))
        conn.execute("INSERT INTO main.chunks_fts (rowid, title, headings, body) VALUES (?, '', '', ?)",
                     (-conn.last_insert_rowid(), text))
        changed += 1
    return changed


def _digest(lang: str, lines: list[tuple[str, str]]) -> str:
    parts = [f"analyzer={ANALYZER_VERSION}", lang, *(f"{line}\t{written}" for line, written in lines)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def fill_indexed(conn: apsw.Connection, analyzed: Callable[[list[tuple[str, str]], str], str]) -> int:
    """Give the anchor rows written before their text was kept (note_anchors.indexed NULL) their
    text, where the lines linking to the note are still those the row was made of (its hash);
    a page of notes a transaction. Returns how many rows got it."""
    missing = [note_id for (note_id,) in conn.execute(
        "SELECT note_id FROM main.note_anchors WHERE indexed IS NULL ORDER BY note_id")]
    filled = 0
    for start in range(0, len(missing), PAGE_NOTES):
        page = set(missing[start:start + PAGE_NOTES])
        with conn:
            hashes = dict(conn.execute("SELECT note_id, text_hash FROM main.note_anchors"
                                       " WHERE note_id IN (SELECT value FROM json_each(?))", (json.dumps(sorted(page)),)))
            for note_id, (lang, lines) in incoming_lines(conn, page).items():
                if hashes.get(note_id) == _digest(lang, lines):
                    conn.execute("UPDATE main.note_anchors SET indexed = ? WHERE note_id = ? AND indexed IS NULL",
                                 (analyzed(lines, lang), note_id))
                    filled += conn.changes()
    return filled
