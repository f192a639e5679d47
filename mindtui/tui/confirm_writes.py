"""Before an answer writes vault files beyond one added link (a new note, links rewritten): the
files it will write, as diffs from the service's dry run; `y` writes them, Esc (or n) does not.
The key that opened it (the card's own) does nothing here: a repeated key cannot apply it."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from mindtui.tui.literal import literal, visible
from mindtui.tui.worker_errors import SurvivesErrors

APPLY_KEY = "y"
DIFF_STYLES = {"+": "bold green", "-": "red strike", "@": "dim"}  # bold and strike survive NO_COLOR


def diff_text(writes: list) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    for write in writes:
        text.append(visible(f"{write.change} {write.path}") + "\n", style="bold underline")
        for line in write.diff.splitlines()[2:]:  # the ---/+++ header: the line above says it
            text.append(visible(line, lines=True) + "\n", style=DIFF_STYLES.get(line[:1], ""))
        text.append("\n")
    return text


class ConfirmWrites(SurvivesErrors, ModalScreen[bool]):
    CSS_PATH = "picker.tcss"
    BINDINGS = [Binding(APPLY_KEY, "apply", "Write the files"), Binding("escape,n", "cancel", "Cancel")]

    def __init__(self, title: str, writes: list) -> None:
        super().__init__()
        self.title_text = title
        self.writes = writes

    def compose(self) -> ComposeResult:
        files = len(self.writes)
        with Vertical(id="confirm"):
            title = f"{self.title_text}: writes {files} file{'s' if files != 1 else ''}"
            yield Static(literal(title), id="picker-title")
            with VerticalScroll(id="confirm-diff"):
                yield Static(diff_text(self.writes))
            yield Static(f"{APPLY_KEY} write · Esc cancel · u undoes it afterwards", id="prompt-hint")

    def action_apply(self) -> None:
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)
