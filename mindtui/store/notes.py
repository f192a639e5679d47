"""Query functions for notes, chunks, their full-text rows and their references."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterable, Iterator

import apsw

from mindtui.store.names import insert_names
from mindtui.store.visibility import model_readable, open_to_agents


@dataclass(frozen=True)
class NoteState:
    """What the importer needs to decide whether a file changed and how links resolve."""

    note_id: str
    path: str
    size: int
    mtime_ns: int
    content_hash: str
    declared_id: str | None
    aliases: list[str]
    parsed_with: str  # the import fingerprint it was written with ('' before there was one)
    hidden_by_flags: bool = False  # stored private or ai_processing: none (decides duplicate ids)


@dataclass(frozen=True)
class NoteRecord:
    note_id: str
    path: str
    title: str
    type: str
    declared_id: str | None
    aliases: list[str]
    tags: list[str]
    frontmatter: dict
    lang: str
    content_hash: str
    size: int
    mtime_ns: int
    retriever_weight: float
    chunk_profile: str
    ai_processing: bool
    private: bool  # effective: private_declared or a folder in privacy.private_paths
    private_declared: bool  # the note's own frontmatter says so
    word_count: int
    warnings: list[str]
    indexed_at: str
    parsed_with: str  # the import fingerprint (parser, analyzer, type registry) it was written with


@dataclass(frozen=True)
class ChunkRecord:
    chunk_key: str
    seq: int
    heading_path: str
    text: str
    token_count: int
    content_hash: str
    retriever_weight: float
    line_start: int
    line_end: int
    fts_title: str  # analyzed (stemmed) text for the FTS columns
    fts_headings: str
    fts_body: str


@dataclass(frozen=True)
class LinkRecord:
    seq: int
    relation: str
    signal: str
    rule_id: str
    confidence: float
    target_raw: str
    target_path: str
    subpath: str
    is_embed: bool
    line: int
    evidence: str
    resolution: str
    resolved_note_id: str | None
    detail: str
    candidates: tuple[str, ...] = ()  # an ambiguous link's notes (their ids, sorted)
    # A resolved or ambiguous link's later rules' notes (resolve._later_rules): what it means to an
    # agent that may see none of its target or candidates.
    fallback: tuple[tuple[str, ...], ...] = ()

    @property
    def target_note_id(self) -> str:  # the vault.edges ResolvedReference protocol
        return self.resolved_note_id or ""


def load_note_states(conn: apsw.Connection) -> dict[str, NoteState]:
    rows = conn.execute(
        "SELECT note_id, path, size, mtime_ns, content_hash, declared_id, aliases, parsed_with,"
        f" NOT ({open_to_agents('notes')}) FROM notes"
    )
    # Most notes have no aliases: '[]' is not decoded (100k json.loads are a tenth of a re-run).
    return {
        path: NoteState(note_id, path, size, mtime_ns, content_hash, declared_id,
                        [] if aliases == "[]" else json.loads(aliases), parsed_with, bool(hidden))
        for note_id, path, size, mtime_ns, content_hash, declared_id, aliases, parsed_with, hidden in rows
    }


def delete_note(conn: apsw.Connection, note_id: str) -> None:
    """Remove a note with everything it owns (chunks, full text, references, edges)."""
    conn.execute("DELETE FROM notes WHERE note_id = ?", (note_id,))


def delete_note_at_path(conn: apsw.Connection, path: str) -> None:
    conn.execute("DELETE FROM notes WHERE path = ?", (path,))


def insert_note(conn: apsw.Connection, note: NoteRecord) -> None:
    conn.execute(
        "INSERT INTO notes (note_id, path, title, type, declared_id, aliases, tags, frontmatter, lang,"
        " content_hash, size, mtime_ns, retriever_weight, chunk_profile, ai_processing, private,"
        " private_declared, word_count, warnings, indexed_at, parsed_with)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            note.note_id, note.path, note.title, note.type, note.declared_id,
            json.dumps(note.aliases, ensure_ascii=False), json.dumps(note.tags, ensure_ascii=False),
            json.dumps(note.frontmatter, ensure_ascii=False, sort_keys=True), note.lang,
            note.content_hash, note.size, note.mtime_ns, note.retriever_weight, note.chunk_profile,
            int(note.ai_processing), int(note.private), int(note.private_declared), note.word_count,
            json.dumps(note.warnings, ensure_ascii=False), note.indexed_at, note.parsed_with,
        ),
    )
    insert_names(conn, note.note_id, note.path, note.title, note.aliases)


def insert_chunks(conn: apsw.Connection, note_id: str, chunks: Iterable[ChunkRecord]) -> None:
    for chunk in chunks:
        conn.execute(
            "INSERT INTO chunks (chunk_key, note_id, seq, heading_path, text, token_count, content_hash,"
            " retriever_weight, line_start, line_end) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (chunk.chunk_key, note_id, chunk.seq, chunk.heading_path, chunk.text, chunk.token_count,
             chunk.content_hash, chunk.retriever_weight, chunk.line_start, chunk.line_end),
        )
        chunk_id = conn.last_insert_rowid()
        conn.execute(
            "INSERT INTO chunks_fts (rowid, title, headings, body) VALUES (?,?,?,?)",
            (chunk_id, chunk.fts_title, chunk.fts_headings, chunk.fts_body),
        )


def insert_links(conn: apsw.Connection, note_id: str, links: Iterable[LinkRecord]) -> None:
    conn.executemany(
        "INSERT INTO note_links (note_id, seq, relation, signal, rule_id, confidence, target_raw,"
        " target_path, subpath, is_embed, line, evidence, resolution, resolved_note_id, detail, candidates,"
        " fallback) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        [
            (note_id, l.seq, l.relation, l.signal, l.rule_id, l.confidence, l.target_raw, l.target_path,
             l.subpath, int(l.is_embed), l.line, l.evidence, l.resolution, l.resolved_note_id, l.detail,
             json.dumps(list(l.candidates)), _fallback_json(l))
            for l in links
        ],
    )


def load_links(conn: apsw.Connection, note_id: str | None = None) -> dict[str, list[LinkRecord]]:
    """References grouped by owner note (all notes, or one)."""
    if note_id is None:
        return _grouped_links(conn, "", ())
    return _grouped_links(conn, " WHERE note_id = ?", (note_id,))


def links_of(conn: apsw.Connection, note_ids: Iterable[str]) -> dict[str, list[LinkRecord]]:
    """The references of these notes, grouped by owner note (a page of notes at a time: the
    importer never holds a large vault's every reference)."""
    return _grouped_links(conn, " WHERE note_id IN (SELECT value FROM json_each(?))", (json.dumps(sorted(note_ids)),))


def _grouped_links(conn: apsw.Connection, where: str, args: tuple) -> dict[str, list[LinkRecord]]:
    sql = (
        "SELECT note_id, seq, relation, signal, rule_id, confidence, target_raw, target_path, subpath,"
        " is_embed, line, evidence, resolution, resolved_note_id, detail, candidates, fallback FROM note_links" + where
    )
    grouped: dict[str, list[LinkRecord]] = {}
    for row in conn.execute(sql + " ORDER BY note_id, seq", args):
        grouped.setdefault(row[0], []).append(
            LinkRecord(row[1], row[2], row[3], row[4], row[5], row[6], row[7], row[8], bool(row[9]),
                       row[10], row[11], row[12], row[13], row[14], tuple(json.loads(row[15])),
                       () if row[16] == "[]" else tuple(tuple(tier) for tier in json.loads(row[16])))
        )
    return grouped


def link_targets(conn: apsw.Connection) -> Iterator[tuple[str, str]]:
    """(owner note id, target path) of every reference, read as they are used (no JSON decoded)."""
    yield from conn.execute("SELECT note_id, target_path FROM note_links")


def note_names(conn: apsw.Connection) -> Iterator[tuple[str, str, list[str]]]:
    """(note id, path, aliases) of every note: what links resolve by."""
    for note_id, path, aliases in conn.execute("SELECT note_id, path, aliases FROM notes"):
        yield note_id, path, json.loads(aliases)


def update_link_resolutions(conn: apsw.Connection, note_id: str, links: Iterable[LinkRecord]) -> None:
    conn.executemany(
        "UPDATE note_links SET resolution = ?, resolved_note_id = ?, detail = ?, candidates = ?, fallback = ?"
        " WHERE note_id = ? AND seq = ?",
        [(l.resolution, l.resolved_note_id, l.detail, json.dumps(list(l.candidates)), _fallback_json(l), note_id,
          l.seq) for l in links],
    )


def _fallback_json(link: LinkRecord) -> str:
    return json.dumps([list(tier) for tier in link.fallback])


def touch_note(conn: apsw.Connection, note_id: str, size: int, mtime_ns: int) -> None:
    """Record a new size/mtime for a file whose content hash did not change."""
    conn.execute("UPDATE notes SET size = ?, mtime_ns = ? WHERE note_id = ?", (size, mtime_ns, note_id))




def stored_warnings(conn: apsw.Connection) -> list[tuple[str, str]]:
    """(path, reason) for every indexed note whose file had problems when it was parsed."""
    out: list[tuple[str, str]] = []
    for path, warnings in conn.execute("SELECT path, warnings FROM notes WHERE warnings != '[]' ORDER BY path"):
        out.extend((path, reason) for reason in json.loads(warnings))
    return out


def note_types(conn: apsw.Connection) -> dict[str, tuple[str, str]]:
    """note_id -> (type, path) for every note."""
    return {note_id: (type_, path) for note_id, type_, path in conn.execute("SELECT note_id, type, path FROM notes")}


def note_count(conn: apsw.Connection) -> int:
    return conn.execute("SELECT count(*) FROM notes").fetchone()[0]


def corpus_stamp(conn: apsw.Connection) -> list:
    """How many notes, chunks, references and edges there are: counted on their smallest index,
    without reading the rows (an import's totals cached under it are taken only by a run that
    wrote nothing itself, so it guards against other writers only)."""
    return list(conn.execute(
        "SELECT (SELECT count(*) FROM notes), (SELECT count(*) FROM chunks),"
        " (SELECT count(*) FROM note_links), (SELECT count(*) FROM edges)").fetchone())


def corpus_counts(conn: apsw.Connection) -> dict[str, int]:
    (notes,) = conn.execute("SELECT count(*) FROM notes").fetchone()
    (chunks,) = conn.execute("SELECT count(*) FROM chunks").fetchone()
    row = conn.execute(
        "SELECT count(*) FILTER (WHERE resolution IN ('missing','ambiguous','out_of_corpus')),"
        " count(*) FILTER (WHERE resolution = 'missing'),"
        " count(*) FILTER (WHERE resolution = 'ambiguous'),"
        " count(*) FILTER (WHERE resolution = 'out_of_corpus'),"
        " count(*) FILTER (WHERE resolution = 'attachment')"
        " FROM note_links"
    ).fetchone()
    return {
        "notes_total": notes, "chunks_total": chunks, "unresolved_total": row[0], "missing_total": row[1],
        "ambiguous_total": row[2], "out_of_corpus_total": row[3], "attachment_links_total": row[4],
    }


def indexed_paths(conn: apsw.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT path FROM notes")}


def resolved_link_paths(conn: apsw.Connection, wikilinks_only: bool = False,
                        model_readable_sources: bool = False) -> dict[str, set[str]]:
    """Note path -> paths of the other indexed notes its references resolve to.

    wikilinks_only: just `[[links]]` written in the text (no embeds, relations or frontmatter).
    model_readable_sources: only notes a model may read (their text becomes a query that the
    embedder and the reranker see): no `ai_processing: none` note.
    """
    only = " AND l.signal = 'wikilink' AND l.is_embed = 0" if wikilinks_only else ""
    if model_readable_sources:
        only += f" AND {model_readable('s')}"
    links: dict[str, set[str]] = {}
    for source, target in conn.execute(
            "SELECT s.path, t.path FROM note_links l JOIN notes s ON s.note_id = l.note_id"
            " JOIN notes t ON t.note_id = l.resolved_note_id"
            f" WHERE l.resolution = 'resolved' AND l.resolved_note_id != l.note_id{only}"):
        links.setdefault(source, set()).add(target)
    return links


def note_bodies(conn: apsw.Connection, note_ids: list[str]) -> dict[str, str]:
    """A note's indexed text (its chunks in order), for matching a renamed file to its old note."""
    out: dict[str, list[str]] = {}
    for start in range(0, len(note_ids), 500):
        batch = note_ids[start:start + 500]
        marks = ",".join("?" * len(batch))
        for note_id, text in conn.execute(
                f"SELECT note_id, text FROM chunks WHERE note_id IN ({marks}) ORDER BY note_id, seq", batch):
            out.setdefault(note_id, []).append(text)
    return {note_id: "\n\n".join(texts) for note_id, texts in out.items()}


def privacy_rows(conn: apsw.Connection) -> list[tuple[str, str, bool, bool]]:
    """(note_id, path, private_declared, private) of every note."""
    return [(nid, path, bool(declared), bool(private)) for nid, path, declared, private in
            conn.execute("SELECT note_id, path, private_declared, private FROM notes")]


def set_private(conn: apsw.Connection, changes: list[tuple[bool, str]]) -> None:
    """[(private, note_id)]: the effective flag after privacy.private_paths changed."""
    conn.executemany("UPDATE notes SET private = ? WHERE note_id = ?", [(int(p), nid) for p, nid in changes])


_NOTE_COLUMNS = ("note_id, path, title, type, declared_id, aliases, tags, frontmatter, lang, content_hash, size,"
                 " mtime_ns, retriever_weight, chunk_profile, ai_processing, private, private_declared, word_count,"
                 " warnings, indexed_at, parsed_with")


def load_note(conn: apsw.Connection, note_id: str) -> NoteRecord | None:
    row = conn.execute(f"SELECT {_NOTE_COLUMNS} FROM notes WHERE note_id = ?", (note_id,)).fetchone()
    if row is None:
        return None
    (nid, path, title, type_, declared, aliases, tags, frontmatter, lang, content_hash, size, mtime_ns, weight,
     profile, ai, private, private_declared, words, warnings, indexed_at, parsed_with) = row
    return NoteRecord(nid, path, title, type_, declared, json.loads(aliases), json.loads(tags), json.loads(frontmatter),
                      lang, content_hash, size, mtime_ns, weight, profile, bool(ai), bool(private),
                      bool(private_declared), words, json.loads(warnings), indexed_at, parsed_with)


@dataclass(frozen=True)
class StoredChunk:
    chunk_id: int | None  # None as handed to an agent (a row id counts the chunks of hidden notes too)
    seq: int
    heading_path: str
    text: str
    token_count: int
    line_start: int
    line_end: int


def note_chunks(conn: apsw.Connection, note_id: str) -> list[StoredChunk]:
    return [StoredChunk(*row) for row in conn.execute(
        "SELECT chunk_id, seq, heading_path, text, token_count, line_start, line_end FROM chunks"
        " WHERE note_id = ? ORDER BY seq", (note_id,))]
