"""A note's text as lines, the one way the curation queue edits a vault file.

The lines break where the importer breaks them (\\r\\n, a lone \\r, \\n: `vault.markdown.decode`),
so line i here is line i of the index and of `markdown.reference_lines`. Each line keeps its own
ending and the byte order mark stays, so the file comes back byte for byte except the lines an
edit changed or added: mixed line endings, a missing newline at the end and all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, TypeVar

from mindtui.curation.vault_edit import EditRefused
from mindtui.vault.markdown import reference_lines

_NEWLINE = re.compile(r"(\r\n|\r|\n)")
Result = TypeVar("Result")


@dataclass
class NoteLines:
    lines: list[str]  # without their endings
    ends: list[str]  # each line's ending; '' for the last line (after a final newline it is an empty line)
    start_line: int  # the body's first line (after the frontmatter)
    masked: list[str]  # the body's lines as references are read: code and comments blanked, same columns

    def scan(self, index: int) -> str:
        """Line `index` as links are found in it: a masked body line, a frontmatter line as written."""
        return self.lines[index] if index < self.start_line else self.masked[index - self.start_line]

    def insert(self, index: int, new: list[str]) -> None:
        """Put `new` lines before line `index`, each ending as the line before them does. Added after
        a last line without an ending, that line gets one and the file still ends without one."""
        before = index - 1
        end = self.ends[before] if before >= 0 and self.ends[before] else self._newline()
        new_ends = [end] * len(new)
        if before >= 0 and not self.ends[before]:
            self.ends[before], new_ends[-1] = end, ""
        self.lines[index:index] = new
        self.ends[index:index] = new_ends
        if index >= self.start_line:
            self.masked[index - self.start_line:index - self.start_line] = [""] * len(new)

    def end_index(self) -> int:
        """Where lines go to end up at the end of the file (before the empty line after a final newline)."""
        return len(self.lines) - 1 if self.lines[-1] == "" else len(self.lines)

    def _newline(self) -> str:
        return next((end for end in self.ends if end), "\n")


def edit_lines(data: bytes, path: str, what: str, edit: Callable[[NoteLines], Result]) -> tuple[bytes, Result]:
    """(the file's bytes after `edit` changed its lines in place, what `edit` returned). EditRefused for
    a file that is not UTF-8 (`what`: the edit, for the message: "edit its links")."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise EditRefused(f"{path} is not valid UTF-8; {what} by hand") from None
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    text = text[len(bom):]
    pieces = _NEWLINE.split(text)
    start_line, masked = reference_lines(text.replace("\r\n", "\n").replace("\r", "\n"))
    note = NoteLines(pieces[0::2], pieces[1::2] + [""], start_line, masked)
    result = edit(note)
    return (bom + "".join(line + end for line, end in zip(note.lines, note.ends))).encode("utf-8"), result
