"""Modal pickers: choose one of a fixed list (a note's links, an ambiguous link's candidates),
or find a note by search (retargeting a link). Esc cancels and returns None."""

from __future__ import annotations

from dataclasses import dataclass

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static, TextArea
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from mindtui.tui.lazy import service_api
from mindtui.tui.literal import LiteralInput, literal
from mindtui.tui.worker_errors import ReportsWorkerErrors, SurvivesErrors


@dataclass
class Choice:
    value: str
    label: str


class PickerScreen(SurvivesErrors, ModalScreen[str | None]):
    CSS_PATH = "picker.tcss"
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, choices: list[Choice]) -> None:
        super().__init__()
        self.title_text = title
        self.choices = choices

    def compose(self) -> ComposeResult:
        with Vertical(id="picker"):
            yield Static(literal(self.title_text), id="picker-title")
            yield OptionList(*[Option(literal(c.label), id=str(i)) for i, c in enumerate(self.choices)],
                             id="picker-list")

    @on(OptionList.OptionSelected, "#picker-list")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(self.choices[int(event.option.id)].value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class NoteSearchPicker(ReportsWorkerErrors, ModalScreen[str | None]):
    """Type to find a note (full text and titles, as in Search mode); Enter picks it (its note id)."""

    CSS_PATH = "picker.tcss"
    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("down", "focus_list", show=False)]

    class Found(Message):
        def __init__(self, query: str, results: list) -> None:
            super().__init__()
            self.query, self.results = query, results

    def __init__(self, title: str, initial: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.initial = initial
        self.results: list = []
        self.results_for: str | None = None  # the query `results` answer
        # Enter came before the answer to what is typed (keys typed ahead in one burst): pick
        # when it arrives, never from the answer to an earlier query.
        self.pick_when_found = False

    def compose(self) -> ComposeResult:
        with Vertical(id="picker"):
            yield Static(literal(self.title_text), id="picker-title")
            yield LiteralInput(self.initial, placeholder="find the note…", id="picker-query")
            yield OptionList(id="picker-list")

    def on_mount(self) -> None:
        self.query_one("#picker-query", Input).focus()
        if self.initial:
            self.find(self.initial)

    @on(Input.Changed, "#picker-query")
    def _changed(self, event: Input.Changed) -> None:
        self.find(event.value)

    @work(thread=True, exclusive=True, exit_on_error=False, group="picker")
    def find(self, query: str) -> None:
        results = []
        if query.strip():
            options = service_api().SearchOptions(mode="fts", limit=20, log=False)
            results = self.app.service.search(query, options).results
        if not get_current_worker().is_cancelled:
            self.post_message(self.Found(query, results))

    @on(Found)
    def _found(self, message: Found) -> None:
        if message.query != self.query_one("#picker-query", Input).value:
            return
        self.results, self.results_for = message.results, message.query
        self.query_one("#picker-list", OptionList).set_options(
            [Option(literal(f"{r.title}  ({r.path})"), id=r.note_id) for r in message.results])
        if self.pick_when_found:
            self.pick_when_found = False
            self._pick_highlighted()

    @on(Input.Submitted, "#picker-query")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self.results_for != event.value:
            self.pick_when_found = True
            return
        self._pick_highlighted()

    def _pick_highlighted(self) -> None:
        option_list = self.query_one("#picker-list", OptionList)
        index = option_list.highlighted if option_list.highlighted is not None else 0
        if self.results:
            self.dismiss(self.results[index].note_id)

    @on(OptionList.OptionSelected, "#picker-list")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_focus_list(self) -> None:
        self.query_one("#picker-list", OptionList).focus()

    def action_cancel(self) -> None:
        self.dismiss(None)


class TextPrompt(SurvivesErrors, ModalScreen[str | None]):
    """A few lines of text (an answer, a quote, a new statement): ctrl+o takes it, Esc cancels."""

    CSS_PATH = "picker.tcss"
    BINDINGS = [Binding("ctrl+o", "take", "Take"), Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str) -> None:
        super().__init__()
        self.title_text = title

    def compose(self) -> ComposeResult:
        with Vertical(id="picker"):
            yield Static(literal(self.title_text), id="picker-title")
            yield TextArea(id="prompt-text")
            yield Static("ctrl+o take it · Esc cancel", id="prompt-hint")

    def on_mount(self) -> None:
        self.query_one("#prompt-text", TextArea).focus()

    def action_take(self) -> None:
        text = self.query_one("#prompt-text", TextArea).text.strip()
        self.dismiss(text or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
