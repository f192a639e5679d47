"""The add/edit form of a knowledge item (a modal). ctrl+o saves, Esc cancels. It returns
{"item_id": id or None, "fields": proposal fields}; the Knowledge mode hands them to the service
(a new item goes through the writer with the owner as source; an edit supersedes the item)."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Checkbox, Input, Label, Select, Static, TextArea

from mindtui.tui.lazy import service_api
from mindtui.tui.literal import LiteralInput, LiteralTextArea
from mindtui.tui.worker_errors import SurvivesErrors



class KnowledgeForm(SurvivesErrors, ModalScreen[dict | None]):
    CSS_PATH = "knowledge_screen.tcss"
    BINDINGS = [Binding("ctrl+o", "save", "Save"), Binding("escape", "cancel", "Cancel")]

    def __init__(self, item=None) -> None:
        super().__init__()
        self.item = item

    def compose(self) -> ComposeResult:
        item = self.item
        with Vertical(id="knowledge-form"):
            yield Static(f"edit #{item.item_id} (saving supersedes it)" if item else "new knowledge item",
                         id="form-title")
            yield Select([(t, t) for t in service_api().KNOWLEDGE_TYPES], value=item.type if item else "fact", allow_blank=False,
                         id="form-type")
            yield Label("statement")
            yield LiteralInput(item.title if item else "", placeholder="one line: what is true", id="form-statement")
            yield Label("about (an entity note, or topic:<words>)")
            yield LiteralInput((item.about or "") if item else "", placeholder="e.g. Jonas Weber", id="form-about")
            yield Label("quote (the source's own words)")
            yield LiteralInput((item.quote or "") if item else "", id="form-quote")
            yield Label("details")
            yield LiteralTextArea(item.body if item else "", id="form-body")
            yield Checkbox("private (never shown to agents)", value=bool(item and item.visibility == "private"),
                           id="form-private")
            yield Static("ctrl+o save · Esc cancel · Tab or Enter next field", id="form-hint")

    def on_mount(self) -> None:
        self.query_one("#form-statement", Input).focus()

    def fields(self) -> dict:
        about = self.query_one("#form-about", Input).value.strip()
        quote = self.query_one("#form-quote", Input).value.strip()
        return {"type": self.query_one("#form-type", Select).value,
                "title": self.query_one("#form-statement", Input).value.strip(),
                "body": self.query_one("#form-body", TextArea).text.strip(),
                "about": about or None, "quote": quote or None,
                "visibility": "private" if self.query_one("#form-private", Checkbox).value else "shared"}

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        """Enter in a one-line field goes on to the next field, as Tab: it saved the form, and an
        edit saved so supersedes the item with what was typed so far. ctrl+o saves."""
        event.stop()
        self.focus_next()

    def action_save(self) -> None:
        fields = self.fields()
        if not fields["title"]:
            self.notify("the statement is empty", severity="warning")
            self.query_one("#form-statement", Input).focus()
            return
        self.dismiss({"item_id": self.item.item_id if self.item else None, "fields": fields})

    def action_cancel(self) -> None:
        self.dismiss(None)
