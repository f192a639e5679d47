"""Text from the vault made safe to print on a terminal.

A file name, a frontmatter title or a note's text may hold control characters: an ESC starts a
terminal sequence (colours, moving the cursor, setting the window title, OSC 52 writes the
clipboard), a carriage return lets a later part overwrite a line, a NUL or a backspace hides
what precedes it. The bidirectional embeddings, overrides and isolates (U+202A-U+202E,
U+2066-U+2069) reorder what follows them on screen: `Rechnung\u202efdp.exe` shows as
`Rechnungexe.pdf` (the "Trojan Source" trick); they count as control characters too. What the CLI
prints for people shows each of them as an escape instead (`\\x1b`, `\\r`, `\\x9b`, `\\u202e`),
so the text reads as it is stored and the terminal acts on none of it.
`--json` needs none of this: JSON writes C0 and C1 escaped, and a program reads the rest as text.
"""

from __future__ import annotations

import re

# What counts as a control character for every front end (the TUI shows them as signs,
# tui.literal): C0, DEL and C1 (U+0080-U+009F: U+009B is a one-character CSI to a terminal
# reading 8-bit controls), and the bidirectional controls that reorder text (BIDI_CONTROLS).
# The marks (U+200E, U+200F) and joiners stay: right-to-left text and emoji need them. The line
# and paragraph separators (U+2028, U+2029) count too: a renderer or str.splitlines() breaks the
# line there, so a one-line title or message would not be one line on screen.
BIDI_CONTROLS = "\u202a-\u202e\u2066-\u2069"
LINE_SEPARATORS = "\u2028\u2029"
CONTROL = re.compile(f"[\\x00-\\x1f\\x7f-\\x9f{BIDI_CONTROLS}{LINE_SEPARATORS}]")
_CONTROL_BUT_LINES = re.compile(f"[\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f-\\x9f{BIDI_CONTROLS}{LINE_SEPARATORS}]|\\r(?!\\n)")
_NAMED = {"\r": "\\r", "\n": "\\n", "\t": "\\t"}


def _escaped(match: re.Match) -> str:
    char = match.group()
    return _NAMED.get(char) or (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")


def printable(text: str) -> str:
    """Several lines for a terminal: line breaks (\\n, \\r\\n) and tabs kept, every other control
    character written as an escape."""
    return _CONTROL_BUT_LINES.sub(_escaped, text) if CONTROL.search(text) else text


def printable_line(text: str) -> str:
    """One line for a terminal (a message on stderr): every control character an escape, line
    breaks and tabs too."""
    return CONTROL.sub(_escaped, text)
