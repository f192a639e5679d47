"""Point links in a note's text at another note, where the importer found them.

Links are found as the importer finds them (code spans, code blocks and comments are not
links): in the frontmatter as written, in the body through `markdown.reference_lines`, whose
blanked copy keeps every column, so a match there is replaced in the file's own line (through
`note_lines.edit_lines`: the rest of the file stays byte for byte). Labels, headings (`#h`,
`#^block`), embeds (`!`) and the table-escaped pipe (`\\|`) stay as they were.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Callable
from urllib.parse import quote, unquote

from mindtui.curation.note_lines import NoteLines, edit_lines
from mindtui.vault.links import MARKDOWN_LINK, WIKILINK, markdown_link_target


@dataclass(frozen=True)
class Retarget:
    """matches(target path) picks the links to change: a wikilink's path as written, a markdown
    link's as a vault path. They then name `wikilink_target` ([[...]]) or `vault_path` ((...))."""

    matches: Callable[[str], bool]
    wikilink_target: str
    vault_path: str
    # A wikilink without a label keeps showing the name it was written with: [[Leah]] -> [[Leah Ferguson|Leah]].
    name_as_label: bool = False


def _wikilink(inner: str, change: Retarget, in_table: bool) -> str | None:
    sep = "\\|" if "\\|" in inner else "|"
    target, has_label, label = inner.partition(sep)
    path, has_sub, sub = target.partition("#")
    if not change.matches(path.strip()):
        return None
    if not has_label and change.name_as_label:
        # A table's cells split at a bare |: a label added there is escaped.
        has_label, label, sep = True, path.strip(), "\\|" if in_table else "|"
    return change.wikilink_target + (f"#{sub}" if has_sub else "") + (f"{sep}{label}" if has_label else "")


def _markdown_url(raw: str, note_dir: str, change: Retarget) -> str | None:
    path = markdown_link_target(raw, note_dir)
    if path is None or not change.matches(path):
        return None
    _, has_anchor, anchor = unquote(raw.strip("<>")).partition("#")
    relative = posixpath.relpath(change.vault_path, note_dir or ".")
    return quote(relative, safe="/") + (f"#{quote(anchor)}" if has_anchor else "")


def _rewrite_line(line: str, scan: str, note_dir: str, change: Retarget, markdown: bool) -> tuple[str, int]:
    """Replace the matching links of `line`, found in `scan` (the same columns, code blanked);
    markdown links too when `markdown` (the body, not the frontmatter)."""
    spans: list[tuple[int, int, str]] = []
    in_table = line.lstrip().startswith("|")
    for match in WIKILINK.finditer(scan):
        inner = _wikilink(line[match.start(2):match.end(2)], change, in_table)
        if inner is not None:
            spans.append((match.start(2), match.end(2), inner))
    if markdown and "](" in scan:
        for match in MARKDOWN_LINK.finditer(scan):
            url = _markdown_url(line[match.start(2):match.end(2)], note_dir, change)
            if url is not None:
                spans.append((match.start(2), match.end(2), url))
    for start, end, text in sorted(spans, reverse=True):
        line = line[:start] + text + line[end:]
    return line, len(spans)


def retarget_links(data: bytes, source_path: str, change: Retarget) -> tuple[bytes, int]:
    """(the new file bytes, how many links changed)."""
    note_dir = source_path.rpartition("/")[0]

    def retarget(note: NoteLines) -> int:
        changed = 0
        for index, line in enumerate(note.lines):
            scan = note.scan(index)
            if "[[" in scan or "](" in scan:
                note.lines[index], count = _rewrite_line(line, scan, note_dir, change, index >= note.start_line)
                changed += count
        return changed

    return edit_lines(data, source_path, "edit its links", retarget)
