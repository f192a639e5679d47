"""Obsidian reference syntax: wikilinks, markdown links to notes, `rel:` lines, `[!edge]` callouts.

Functions here read text that has already been masked (code and comments blanked out
by mindtui.vault.markdown), so anything they find is a real reference.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from urllib.parse import unquote

from mindtui.text import analysis
from mindtui.vault.types import relation_name

LINKS_TO = "links_to"
WIKILINK_CONFIDENCE = 1.0
INLINE_CONFIDENCE = 0.95
CALLOUT_CONFIDENCE = 0.95
FRONTMATTER_CONFIDENCE = 1.0
EVIDENCE_CHARS = 300

WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]*?)\]\]")
# No '[' in the text or the target: each match attempt then stops at the next '[', so a long line of
# '[a](' pieces takes linear time, not minutes (a target found is the same). A target may hold
# balanced parentheses, one level deep, as CommonMark allows (`[x](Kanban%20(SlRvb).md)`); the two
# alternatives start with different characters, so the loop never backtracks.
MARKDOWN_LINK = re.compile(r"(!?)\[[^\[\]\n]*\]\((<[^>\n]+>|(?:[^()\s\[]|\([^()\s\[]*\))+)(?:\s+\"[^\"\n]*\")?\)")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
REL_LINE = re.compile(r"^\s*(?:[-*+]\s+)?rel::?\s*([A-Za-z][\w-]*)\s*:?\s+(.*\[\[.*)$")
CALLOUT_START = re.compile(r"^\s*>\s*\[!([^\]\n]+)\][+-]?\s?(.*)$")
CALLOUT_LINE = re.compile(r"^\s*>(.*)$")
RELATION_PART = re.compile(r"^\s*([A-Za-z][\w -]*?)\s*::?\s*(.*\[\[.*)$")

# Links to these are attachments, not notes (Obsidian opens them with a viewer).
ATTACHMENT_EXTENSIONS = frozenset(
    "png jpg jpeg gif svg webp bmp avif pdf mp3 mp4 webm ogg ogv wav m4a flac mov mkv "
    "canvas base excalidraw csv zip docx xlsx pptx epub".split()
)


@dataclass(frozen=True)
class LinkRef:
    relation: str
    signal: str  # wikilink | inline | callout | frontmatter
    rule_id: str
    confidence: float
    target_raw: str  # as written, without the label
    target_path: str  # before '#', '' for a link into the same note
    subpath: str  # heading or ^block, '' when none
    is_embed: bool
    line: int  # 1-based line in the file; 0 for frontmatter
    evidence: str


def split_target(inner: str) -> tuple[str, str, str]:
    """'Folder/Note#Heading|label' -> ('Folder/Note#Heading', 'Folder/Note', 'Heading')."""
    inner = inner.replace("\\|", "|")  # tables escape the label pipe
    target = inner.split("|", 1)[0].strip()
    path, _, subpath = target.partition("#")
    return target, path.strip(), subpath.strip()


def is_attachment(target_path: str) -> bool:
    _, dot, ext = target_path.rpartition(".")
    return bool(dot) and ext.lower() in ATTACHMENT_EXTENSIONS


def evidence_around(line_text: str, start: int, end: int) -> str:
    """The line a reference stands in (stripped), cut to a window around it when the line is long.
    Only the window is copied: a 1 MB line with 100,000 links would copy 100 GB otherwise."""
    first, last = 0, len(line_text)
    while first < last and line_text[first].isspace():
        first += 1
    while last > first and line_text[last - 1].isspace():
        last -= 1
    size = last - first
    if size <= EVIDENCE_CHARS:
        return line_text[first:last]
    start, end = max(0, start - first), max(0, end - first)
    half = (EVIDENCE_CHARS - (end - start)) // 2
    lo = max(0, start - max(half, 0))
    hi = min(size, lo + EVIDENCE_CHARS)
    return ("…" if lo else "") + line_text[first + lo:first + hi].strip() + ("…" if hi < size else "")


def wikilinks_in(text: str) -> list[re.Match[str]]:
    return list(WIKILINK.finditer(text))


def _ref(match: re.Match[str], line_text: str, line_no: int, relation: str, signal: str,
         rule_id: str, confidence: float) -> LinkRef:
    # line_text is the original line; match offsets come from its masked twin (same length).
    target, path, subpath = split_target(match.group(2))
    return LinkRef(
        relation=relation, signal=signal, rule_id=rule_id, confidence=confidence,
        target_raw=target, target_path=path, subpath=subpath, is_embed=match.group(1) == "!",
        line=line_no, evidence=evidence_around(line_text, match.start(), match.end()),
    )


def is_url(raw: str) -> bool:
    """A link target that is a web address or another scheme's (also when written `((https://…`,
    a typo Obsidian reads as text): never a note path."""
    bare = raw.lstrip("(<").strip()
    return bool(_SCHEME.match(bare)) or "://" in raw or bare.lower().startswith("www.")


def markdown_link_target(raw: str, note_dir: str) -> str | None:
    """A markdown link's target as a link path, or None for URLs and in-page anchors. Obsidian
    resolves `[x](Name)` like `[[Name]]` (vault path, path from the note's folder, unique file
    name, vault-wide), so the path comes back as written; only `./` and `../` paths, which
    name the note's own folder, come back joined to it, and `/path` from the vault root."""
    raw = raw[1:-1] if raw.startswith("<") else raw
    if not raw or raw.startswith("#") or is_url(raw):
        return None
    raw = unquote(raw)
    path, _, _ = raw.partition("#")
    if not path:
        return None
    if path.startswith("/"):
        return path.lstrip("/")
    if path.startswith(("./", "../")):
        return posixpath.normpath(posixpath.join(note_dir, path)) if note_dir else posixpath.normpath(path)
    return path


def references_in_line(masked: str, line_text: str, line_no: int, note_dir: str) -> list[LinkRef]:
    """Plain links (wikilinks and markdown links to vault files) in one line."""
    refs = [
        ref for m in WIKILINK.finditer(masked)
        if "://" not in (ref := _ref(m, line_text, line_no, LINKS_TO, "wikilink", "wikilink",
                                     WIKILINK_CONFIDENCE)).target_path  # [[https://…]] names no note
    ]
    if "](" in masked:
        for m in MARKDOWN_LINK.finditer(masked):
            path = markdown_link_target(m.group(2), note_dir)
            if path is None:
                continue
            _, _, subpath = unquote(m.group(2).strip("<>")).partition("#")
            refs.append(LinkRef(
                relation=LINKS_TO, signal="wikilink", rule_id="markdown_link",
                confidence=WIKILINK_CONFIDENCE, target_raw=m.group(2).strip("<>"),
                target_path=path, subpath=subpath, is_embed=m.group(1) == "!", line=line_no,
                evidence=evidence_around(line_text, m.start(), m.end()),
            ))
    return refs


def typed_references(text: str, line_text: str, line_no: int, signal: str, rule_id: str,
                     confidence: float, relation: str) -> list[LinkRef]:
    name = relation_name(relation)
    evidence = line_text.strip()[:EVIDENCE_CHARS]  # rel lines and callout lines are short
    refs = []
    for m in WIKILINK.finditer(text):
        target, path, subpath = split_target(m.group(2))
        refs.append(LinkRef(
            relation=name, signal=signal, rule_id=rule_id, confidence=confidence, target_raw=target,
            target_path=path, subpath=subpath, is_embed=m.group(1) == "!", line=line_no,
            evidence=evidence,
        ))
    return refs


def rel_line_references(masked: str, line_text: str, line_no: int) -> list[LinkRef]:
    """`rel: similar_to [[X]] [[Y]]` -> one typed reference per link."""
    match = REL_LINE.match(masked)
    if not match:
        return []
    return typed_references(match.group(2), line_text, line_no, "inline", "inline:rel",
                            INLINE_CONFIDENCE, match.group(1))


def callout_relation_references(content: str, line_text: str, line_no: int) -> list[LinkRef]:
    """The `relation: [[X]] [[Y]]` part of a line inside an `[!edge]` callout."""
    match = RELATION_PART.match(content)
    if not match:
        return []
    return typed_references(match.group(2), line_text, line_no, "callout", "callout:edge",
                            CALLOUT_CONFIDENCE, match.group(1))


def frontmatter_references(metadata: dict, fm_lines: list[str], relation_for) -> list[LinkRef]:
    """Wikilinks in frontmatter values (`related: ["[[X]]"]`) as typed references."""
    skip = {"aliases", "alias", "tags", "tag", "cssclasses", "cssclass", "id", "type", "title"}
    refs: list[LinkRef] = []
    for key, value in metadata.items():
        if not isinstance(key, str) or key.lower() in skip:
            continue
        values = value if isinstance(value, list) else [value]
        strings = [v for v in values if isinstance(v, str) and "[[" in v]
        if not strings:
            continue
        line_no = next((i + 2 for i, text in enumerate(fm_lines) if text.startswith(f"{key}:")), 1)
        relation = relation_for(key)
        for text in strings:
            for m in WIKILINK.finditer(text):
                target, path, subpath = split_target(m.group(2))
                refs.append(LinkRef(
                    relation=relation, signal="frontmatter", rule_id=f"frontmatter:{key.lower()}",
                    confidence=FRONTMATTER_CONFIDENCE, target_raw=target, target_path=path,
                    subpath=subpath, is_embed=False, line=line_no,
                    evidence=f"{key}: {text}"[:EVIDENCE_CHARS],
                ))
    return refs


def anchor_text(lines: list[tuple[str, str]], lang: str) -> str:
    """The indexed form of the lines that link to a note (store.anchors), given as (line, the
    link's target as written): the link itself read as the words a reader sees ([[Target|label]]
    -> label, [[Folder/Note#Part]] -> Note Part), other wikilinks of the line dropped (a line
    that lists ten notes describes none of them by the other nine names), duplicate lines once,
    stemmed in the target note's language."""
    seen: dict[str, None] = {}
    for line, target_raw in lines:
        seen.setdefault(WIKILINK.sub(lambda match: _shown_words(match, target_raw), line), None)
    return analysis.analyze(" ".join(seen), lang)


def _shown_words(match: re.Match[str], target_raw: str) -> str:
    inner = match.group(2).replace("\\|", "|")
    target, _, label = inner.partition("|")
    if target.strip() != target_raw.strip():
        return " "
    if label.strip():
        return label
    return " ".join(part.rpartition("/")[2] for part in target.split("#"))
