"""Turn one file's bytes into the rows the store keeps for it (note, chunks, references)."""

from __future__ import annotations

import datetime
import hashlib
import math
import re
from dataclasses import dataclass, field, replace

from mindtui.text import analysis
from mindtui.store.notes import ChunkRecord, LinkRecord, NoteRecord
from mindtui.text.globs import excluded_by
from mindtui.text.names import is_id_like, passage_text
from mindtui.vault.chunking import chunk_note
from mindtui.vault.flags import flag_key, read_flags, read_flags_from_lines
from mindtui.vault.links import LinkRef
from mindtui.vault.front_matter import split_frontmatter
from mindtui.vault.markdown import ParsedNote, decode, parse_note, reject_binary, string_list
from mindtui.vault.resolve import NameIndex
from mindtui.vault.types import TypeRegistry

# Bump when parsing or chunking changes meaning: the importer then re-reads every file.
PARSER_VERSION = 9  # 2: id-like titles out of the embedded passage; 3: strict consent flags, private folders;
# 4: anchor-text rows (a re-read builds them for a database migrated from before); 5: the token estimate
# counts letters outside ASCII and äöüß one by one and word-initial symbols twice (chunks are cut again);
# links as Obsidian reads them (code spans from markdown-it, %% only outside code, markdown links by name,
# no alias resolution); 6: YAML values that cannot be built kept as text, frontmatter warnings' line
# numbers, no '[' in a markdown link's target; 7: names compare composed (NFC: a Mac's decomposed 'Übung.md'
# answers a typed [[Übung]]), the name index's keys so too; tags and aliases from scalars only, `true` as written;
# a note's retriever_weight within 0..MAX_RETRIEVER_WEIGHT; 8: a frontmatter title is one line; 9: a closed
# HTML comment is no content (as %%comments%%)


PLAIN_TEXT_MARK = ";plain-text"  # ends the fingerprint of a note imported as plain text
# A note's own retriever_weight multiplies its fused score (types weigh 0.85-1.15): beyond this it
# would put the note first in every search (1e308 made its score infinite, and --json said Infinity).
MAX_RETRIEVER_WEIGHT = 10.0


def import_fingerprint(registry: TypeRegistry) -> str:
    """What a note's rows depend on besides its file; stored with each note (notes.parsed_with):
    a note written under another fingerprint is parsed again."""
    return f"parser={PARSER_VERSION};analyzer={analysis.ANALYZER_VERSION};types={registry.fingerprint}"


def sha256_hex(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def path_note_id(path: str) -> str:
    """The stable id of a note without a frontmatter id: a hash of its vault path."""
    return "p" + sha256_hex(path)[:15]


def declared_id(metadata: dict) -> str | None:
    value = metadata.get("id")
    if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
        return str(value).strip()
    return None


@dataclass
class ParsedFile:
    """A file read and parsed, before its note id is settled."""

    path: str
    size: int
    mtime_ns: int
    content_hash: str
    parsed: ParsedNote
    declared_id: str | None
    aliases: list[str]
    warnings: list[str] = field(default_factory=list)
    # Imported as plain text because parsing failed: stored under a fingerprint of its own
    # (PLAIN_TEXT_MARK), so every import tries to parse it again (a fixed parser, or file, ends it).
    plain_text: bool = False


def aliases_of(metadata: dict) -> list[str]:
    return string_list(metadata.get("aliases", metadata.get("alias")))


@dataclass(frozen=True)
class FileHead:
    """What the importer needs of a changed file before any note is written (its id, the names
    links resolve by, rename matching), without its parse: the file is parsed when it is written."""

    path: str
    size: int
    mtime_ns: int
    content_hash: str
    declared_id: str | None
    aliases: list[str]
    hidden_by_flags: bool = False  # private or ai_processing: none (flags_hide), decides duplicate ids


def flags_hide(metadata: dict, unreadable_lines: list[str] | None = None) -> bool:
    """Whether the frontmatter's consent flags keep the note from agents (as build_rows reads them)."""
    flags = read_flags(metadata) if unreadable_lines is None else read_flags_from_lines(unreadable_lines)
    return flags.private or not flags.ai_processing


_FRONTMATTER_STARTS = (b"---", b"\xef\xbb\xbf---")  # with or without a UTF-8 byte order mark


def read_head(path: str, data: bytes, size: int, mtime_ns: int) -> FileHead:
    """The file's head: its frontmatter read as parse_file reads it (only a file that starts with
    '---' has one: most are not decoded here). Raises markdown.NotMarkdownError for binary content."""
    reject_binary(data)
    metadata, lines, warnings = {}, [], []
    if data.startswith(_FRONTMATTER_STARTS):
        metadata, _body, _start, lines, warnings = split_frontmatter(decode(data)[0])
    hidden = flags_hide(metadata, lines if warnings and not metadata else None)
    return FileHead(path, size, mtime_ns, sha256_hex(data), declared_id(metadata), aliases_of(metadata), hidden)


def parse_file(path: str, data: bytes, size: int, mtime_ns: int, registry: TypeRegistry) -> ParsedFile:
    """Raises markdown.NotMarkdownError for binary content; everything else becomes a warning."""
    text, warnings = decode(data)
    parsed = parse_note(text, path, registry.frontmatter_relation)
    warnings = warnings + parsed.warnings
    if not text.strip():
        warnings.append("empty file")
    aliases = aliases_of(parsed.metadata)
    return ParsedFile(path, size, mtime_ns, sha256_hex(data), parsed, declared_id(parsed.metadata), aliases, warnings)


def plain_file(path: str, data: bytes, size: int, mtime_ns: int, reason: str) -> ParsedFile:
    """The file as plain text, for a note the parser failed on: every line kept as it is, no
    frontmatter, structure, links or tags, `reason` as its warning. Consent flags are read from
    its leading `---` block (or, with no closing `---`, from every line), failing closed."""
    text, warnings = decode(data)
    lines = text.split("\n")
    head: list[str] = []
    if lines[0].strip() == "---":
        closing = next((i for i, line in enumerate(lines[1:], start=1) if line.strip() == "---"), len(lines))
        head = lines[1:closing]
    return _plain(path, lines, size, mtime_ns, sha256_hex(data), {}, head, warnings + [reason])


def as_plain_text(item: ParsedFile, reason: str) -> ParsedFile:
    """A parsed note reduced to its body as plain text (for rows that could not be built from it);
    its consent flags stay what they were."""
    flags = {key: value for key, value in item.parsed.metadata.items() if flag_key(key)}
    decoding = [w for w in item.warnings if w.startswith("invalid UTF-8")]
    return _plain(item.path, item.parsed.lines, item.size, item.mtime_ns, item.content_hash, flags,
                  item.parsed.unreadable_frontmatter, decoding + [reason])


def _plain(path: str, lines: list[str], size: int, mtime_ns: int, content_hash: str, flags: dict,
           head: list[str] | None, warnings: list[str]) -> ParsedFile:
    parsed = ParsedNote(metadata=flags, lines=lines, body_start_line=0, headings=[], fences=[], links=[], tags=[],
                        warnings=warnings[-1:], unreadable_frontmatter=head)
    return ParsedFile(path, size, mtime_ns, content_hash, parsed, None, [], warnings, plain_text=True)


def failure_reason(exc: BaseException) -> str:
    """An unexpected error in one file's parsing, as a short reason for its warning."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__


_LINE_BREAKS = re.compile(r"\s*[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]+\s*")


def title_for(path: str, metadata: dict) -> str:
    title = metadata.get("title")
    if isinstance(title, str) and title.strip():
        # One line: a title is shown where a line break would break a list or a table (`title: |`)
        return _LINE_BREAKS.sub(" ", title.strip())
    return path.rpartition("/")[2][:-3] if path.lower().endswith(".md") else path.rpartition("/")[2]


@dataclass
class NoteRows:
    note: NoteRecord
    chunks: list[ChunkRecord]
    links: list[LinkRecord]


def resolve_links(links: list[LinkRecord], note_id: str, path: str, names: NameIndex) -> list[LinkRecord]:
    """The same references with their resolution against `names` filled in."""
    out: list[LinkRecord] = []
    for link in links:
        found = names.resolve(link.target_path, note_id, path)
        out.append(replace(link, resolution=found.status, resolved_note_id=found.note_id, detail=found.detail,
                           candidates=found.candidates, fallback=found.fallback))
    return out


def _link_records(refs: list[LinkRef], note_id: str, path: str, names: NameIndex) -> list[LinkRecord]:
    """The note's references as rows, resolved against `names` (what resolve_links would give)."""
    out: list[LinkRecord] = []
    for seq, ref in enumerate(refs):
        found = names.resolve(ref.target_path, note_id, path)
        out.append(LinkRecord(seq, ref.relation, ref.signal, ref.rule_id, ref.confidence, ref.target_raw,
                              ref.target_path, ref.subpath, ref.is_embed, ref.line, ref.evidence,
                              found.status, found.note_id, found.detail, found.candidates, found.fallback))
    return out


def build_rows(item: ParsedFile, note_id: str, registry: TypeRegistry, names: NameIndex,
               private_paths: tuple[str, ...] = ()) -> NoteRows:
    meta = item.parsed.metadata
    broken = item.parsed.unreadable_frontmatter
    flags = read_flags(meta) if broken is None else read_flags_from_lines(broken)
    warnings = list(item.warnings) + flags.warnings
    note_type = registry.type_for(meta.get("type"), item.path)
    type_info = registry.note_type(note_type)
    if note_type not in registry.types:
        warnings.append(f"type {note_type!r} is not in the type registry; using {registry.default_type!r} settings")

    profile_name = type_info.chunk_profile
    if isinstance(meta.get("chunk_profile"), str):
        if meta["chunk_profile"] in registry.profiles:
            profile_name = meta["chunk_profile"]
        else:
            warnings.append(f"unknown chunk_profile {meta['chunk_profile']!r}; using {profile_name!r}")
    weight = type_info.retriever_weight
    if "retriever_weight" in meta:
        try:
            weight = float(meta["retriever_weight"])
            if not math.isfinite(weight):
                raise ValueError(weight)
            if not 0 <= weight <= MAX_RETRIEVER_WEIGHT:
                weight = type_info.retriever_weight
                warnings.append(f"retriever_weight {meta['retriever_weight']!r} is outside 0 to "
                                f"{MAX_RETRIEVER_WEIGHT:g}; using {weight}")
        except (TypeError, ValueError):
            weight = type_info.retriever_weight
            warnings.append(f"retriever_weight {meta['retriever_weight']!r} is not a number; using {weight}")

    title = title_for(item.path, meta)
    body = "\n".join(item.parsed.lines)
    lang = analysis.detect_language(body)
    chunks = chunk_note(title, item.parsed, registry.profile(profile_name))
    # An id-like title (202311291530) is no words: exact title matching still finds it.
    fts_title = analysis.analyze(" ".join(([] if is_id_like(title) else [title]) + item.aliases), lang)
    fts_headings = {path: analysis.analyze(path, lang) for path in {c.heading_path for c in chunks}}
    chunk_rows = [
        ChunkRecord(
            chunk_key=f"{note_id}#{c.seq}", seq=c.seq, heading_path=c.heading_path, text=c.text,
            token_count=c.token_count, content_hash=sha256_hex(passage_text(title, c.heading_path, c.text)),
            retriever_weight=weight, line_start=c.line_start, line_end=c.line_end, fts_title=fts_title,
            fts_headings=fts_headings[c.heading_path], fts_body=analysis.analyze(c.text, lang),
        )
        for c in chunks
    ]
    note = NoteRecord(
        note_id=note_id, path=item.path, title=title, type=note_type, declared_id=item.declared_id,
        aliases=item.aliases, tags=item.parsed.tags, frontmatter=meta, lang=lang,
        content_hash=item.content_hash, size=item.size, mtime_ns=item.mtime_ns, retriever_weight=weight,
        chunk_profile=profile_name, ai_processing=flags.ai_processing,
        private=flags.private or excluded_by(item.path, private_paths) is not None,
        private_declared=flags.private, word_count=analysis.word_count(body), warnings=warnings,
        indexed_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        parsed_with=import_fingerprint(registry) + (PLAIN_TEXT_MARK if item.plain_text else ""),
    )
    return NoteRows(note, chunk_rows, _link_records(item.parsed.links, note_id, item.path, names))
