"""Point links in a note's text at another note, where the importer found them.

Links are found as the importer finds them (code spans, code blocks and comments are not
links): in the frontmatter as written, in the body through `markdown.reference_lines`, whose
blanked copy keeps every column, so a match there is replaced in the file's own line. Labels,
headings (`#h`, `#^block`), embeds (`!`), the table-escaped pipe (`\\|`), line endings and a byte
order mark stay as they were.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Callable
from urllib.parse import quote, unquote

from mindtui.curation.vault_edit import EditRefused
from mindtui.vault.links import MARKDOWN_LINK, WIKILINK, markdown_link_target
from mindtui.vault.markdown import reference_lines

_NEWLINE = re.compile(r"(\r\n|\r|\n)")


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
    try:
        raw = data.decode("utf-8")
    except UnicodeDecodeError:
        raise EditRefused(f"{source_path} is not valid UTF-8; edit its links by hand") from None
    bom = "\ufeff" if raw.startswith("\ufeff") else ""
    raw = raw[len(bom):]
    start_line, body = reference_lines(raw.replace("\r\n", "\n").replace("\r", "\n"))
    pieces = _NEWLINE.split(raw)
    lines, seps = pieces[0::2], pieces[1::2]
    note_dir = source_path.rpartition("/")[0]
    changed = 0
    for index, line in enumerate(lines):
        scan = line if index < start_line else body[index - start_line]
        if "[[" in scan or "](" in scan:
            lines[index], count = _rewrite_line(line, scan, note_dir, change, index >= start_line)
            changed += count
    out = "".join(line + (seps[i] if i < len(seps) else "") for i, line in enumerate(lines))
    return (bom + out).encode("utf-8"), changed
