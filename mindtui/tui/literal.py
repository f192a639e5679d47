"""Text from the vault shown as it is written: never read as markup, never sent as terminal control.

Textual reads a plain str given to Static, Label, an Option's prompt or notify() as content
markup, and Rich reads one given to a Tree label or a Table cell as console markup: a note
titled `[/]` raised MarkupError while the screen was drawn (the app ended), `[@click=app.quit]x`
became a clickable action and `[bold]` restyled the rest. And neither filters ESC: a title or
a file name holding `\\x1b]0;...\\x07` or `\\x1b[2J` reached the terminal as a command. So every
string that carries note data (titles, paths, snippets, card and item texts, reports, notices)
reaches a widget as `literal(...)` (Textual) or `literal_text(...)` (Rich), both made `visible`;
a field that is filled with note data, or that a user may paste into, is a LiteralInput or a
LiteralTextArea.
"""

from __future__ import annotations

import re

from rich.cells import cell_len, get_character_cell_size
from rich.text import Text
from textual.content import Content
from textual.widgets import Input, TextArea

from mindtui.service.printable import BIDI_CONTROLS, CONTROL, LINE_SEPARATORS

# Each control character becomes one visible character of one column, so offsets into the text
# (a snippet's highlights) and the room counted for it stay right: C0 as its Unicode control
# picture (ESC -> ␛, NUL -> ␀), DEL as ␡, C1 (0x80-0x9f, CSI among them), the bidirectional
# controls (a right-to-left override would reverse what follows) and the line and paragraph
# separators as the replacement sign.
_PICTURES = {code: chr(0x2400 + code) for code in range(0x20)} | {0x7F: "\u2421"} \
    | {code: "\ufffd" for code in [*range(0x80, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x2028, 0x2029]}
_ONE_LINE = str.maketrans(_PICTURES)
_LINES = str.maketrans({code: picture for code, picture in _PICTURES.items() if chr(code) not in "\n\t"})
# Most text has none: looking costs 6 us a 2,000-character page, translating it 137 us.
_ANY_ONE_LINE = CONTROL  # the characters _PICTURES covers
_ANY_LINES = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{BIDI_CONTROLS}{LINE_SEPARATORS}]")  # not \t (09) nor \n (0a)


def visible(text: str, *, lines: bool = False) -> str:
    """text with every control character shown as a sign; lines=True: newlines and tabs stay (a
    panel of several lines, a note's body)."""
    if (_ANY_LINES if lines else _ANY_ONE_LINE).search(text) is None:
        return text
    return text.translate(_LINES if lines else _ONE_LINE)


def literal(text: str, *, lines: bool = False) -> Content:
    """text for a Textual widget (Static, Label, Option, notify): shown as written."""
    return Content(visible(text, lines=lines))


def literal_text(text: str, style: str = "", *, lines: bool = False) -> Text:
    """text for a Rich renderable (a Tree label, a Table cell): shown as written."""
    return Text(visible(text, lines=lines), style=style)


class LiteralInput(Input):
    """An Input whose value is drawn with control characters shown (each as one sign), and whose
    cursor and mouse clicks count the signs drawn: Input counts a control character as no
    column, so the cursor sat one column left of where it was per control character."""

    @property
    def _value(self) -> Text:
        # Not through a highlighter: Rich's Text() drops BEL, BS, VT, FF and CR before one sees
        # them, so what was drawn lost a character the value (and the cursor) still had.
        if self.password:
            return super()._value
        return Text(visible(self.value), no_wrap=True, overflow="ignore", end="")

    def _position_to_cell(self, position: int) -> int:
        return cell_len(visible(self.value[:position]))  # (a tab is drawn as a sign too: ␉)

    def _cell_offset_to_index(self, offset: int) -> int:
        shown = visible(self.value)  # one character for one: the indexes are the value's
        cell_offset, (scroll_x, _) = 0, self.scroll_offset
        offset += scroll_x
        for index, char in enumerate(shown):
            width = get_character_cell_size(char)
            if cell_offset <= offset < cell_offset + width:
                return index
            cell_offset += width
        return max(0, min(offset, len(shown)))


class LiteralTextArea(TextArea):
    """A TextArea whose lines are drawn with control characters shown (its text stays as it is)."""

    def get_line(self, line_index: int) -> Text:
        line = super().get_line(line_index)
        line.plain = visible(line.plain, lines=True)
        return line
