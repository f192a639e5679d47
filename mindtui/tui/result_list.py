"""The result list of Search mode (every row enabled): no wrap-around (the last row is where more results load, the
first is where Up goes back to the query), and g/G beside Home/End."""

from __future__ import annotations

from textual.binding import Binding
from textual.message import Message
from textual.widgets import OptionList


class ResultList(OptionList):
    BINDINGS = [
        Binding("g,home", "first", "First result", show=False),
        Binding("G,end", "last", "Last result (the next page loads)", show=False),
    ]

    class LeftAtTop(Message):
        """Up on the first row: the screen puts the focus back into the query."""

    def action_cursor_down(self) -> None:
        if self.option_count:
            self.highlighted = 0 if self.highlighted is None else min(self.highlighted + 1, self.option_count - 1)

    def action_cursor_up(self) -> None:
        if self.highlighted in (None, 0):
            self.post_message(self.LeftAtTop())
        else:
            self.highlighted -= 1
