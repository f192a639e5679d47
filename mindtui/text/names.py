"""How names compare and what gets embedded for a chunk.

`exact_key`: titles, aliases and queries compare without case, spacing or Unicode normalisation.
`is_id_like`: a title that is only an id (Zettelkasten timestamps like 202311291530, hashes,
uuids) says nothing about the text: it is shown and matched exactly, but not embedded.
`not_utf8`: a file name or argument Python could only decode with lone surrogates.
`passage_text`: the embedded text of a chunk (context line, then body); chunks.content_hash
covers it, so a change of title or heading re-embeds the chunk.
"""

from __future__ import annotations

import os
import re
import unicodedata

_ID_LIKE = re.compile(r"(?=[^-_.]*\d)[0-9a-f]{8,}([-_.][0-9a-f]+)*", re.IGNORECASE)


def composed(text: str) -> str:
    """The text in NFC, one form for what a keyboard types composed and a Mac writes decomposed
    (file names: 'U' + U+0308 for 'Ü'); the check alone is a few per cent of reading the text."""
    return text if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)


def exact_key(text: str) -> str:
    """How titles and aliases are compared with a query: case, spacing and composition do not
    matter (a file name from a Mac spells `Übung` decomposed, NFD; a keyboard types it composed)."""
    return " ".join(composed(text.casefold()).split())


def is_id_like(title: str) -> bool:
    return bool(_ID_LIKE.fullmatch(title.strip()))


def passage_text(title: str, heading_path: str, text: str) -> str:
    """What gets embedded for a chunk (context line, then body)."""
    title = "" if is_id_like(title) else title
    context = " > ".join(part for part in (title, heading_path) if part)
    if not context:
        return text
    return f"{context}\n{text}" if text else context


def not_utf8(name: str) -> str | None:
    """None for a name (a file's, an argument) that is UTF-8; for one that is not, its text with the
    odd bytes written as \\xNN. Python hands such bytes over as lone surrogates, which no path the
    store, a link or a terminal holds can carry."""
    try:
        name.encode("utf-8")
        return None
    except UnicodeEncodeError:
        return os.fsencode(name).decode("utf-8", "backslashreplace")
