"""Knowledge mode: the curated items by subject and type, each with its status, supersede chain,
provenance and quote; `o` jumps to the source note, `a` adds an item, `e` edits one (the edit
supersedes it: history stays), `h` shows superseded items too."""

from __future__ import annotations

from typing import Callable

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from mindtui.tui.key_footer import KeyFooter
from mindtui.tui.lazy import service_api
from mindtui.tui.literal import LiteralInput, literal, visible
from mindtui.tui.knowledge_form import KnowledgeForm
from mindtui.tui.status import StatusBar
from mindtui.tui.worker_errors import ReportsWorkerErrors

LIST_LIMIT = 1000


def subject_of(item) -> str:
    return item.about or "(no subject)"


def item_detail(item) -> str:
    lines = [f"#{item.item_id}  {item.type}  ·  {item.status}" + ("" if item.is_current else "  ·  ended"),
             "", visible(item.title)]
    if item.body:
        lines += ["", item.body]
    if item.quote:
        lines += ["", f"“{item.quote}”"]
    lines += ["", f"about       {subject_of(item)}",
              f"source      {item.source_type} {item.source_id}" + (f"  ({item.source_path})" if item.source_path else ""),
              f"confidence  {item.confidence:.2f}   importance {item.importance:.2f}   {item.visibility}",
              f"valid from  {item.valid_from}" + (f"   ended {item.ended_at}" if item.ended_at else "")]
    if item.stale_since:
        lines.append(f"stale since {item.stale_since}: its source text changed")
    chain = [*reversed(item.supersedes), {"item_id": item.item_id, "status": item.status, "title": item.title},
             *item.superseded_chain]
    if len(chain) > 1:
        lines += ["", "supersede chain (oldest first):"]
        lines += [f"  {'→' if link['item_id'] == item.item_id else ' '} #{link['item_id']} {link['status']}: "
                  f"{link['title']}" for link in chain]
    if len(item.sources) > 1:
        lines += ["", f"stated by {len(item.sources)} sources:"]
        lines += [f"  {source.get('source_type', '')} {source.get('source_id', '')}" for source in item.sources]
    lines += ["", "o source note · e edit · a add · h history"]
    return "\n".join(lines)


class KnowledgeScreen(ReportsWorkerErrors, Screen):
    CSS_PATH = "knowledge_screen.tcss"
    PALETTE = [("Knowledge: add an item", "a new item with you as its source (a)", "add"),
               ("Knowledge: edit the item", "supersede it with an edited one (e)", "edit"),
               ("Knowledge: source note", "open the note the item comes from (o)", "source"),
               ("Knowledge: history", "show superseded items too (h)", "history"),
               ("Knowledge: filter", "filter by words, subject or type (/)", "filter")]
    BINDINGS = [
        Binding("a", "add", "Add"),
        Binding("e", "edit", "Edit"),
        Binding("o", "source", "Source note"),
        Binding("h", "history", "History"),
        Binding("slash", "filter", "Filter", show=False),
        Binding("escape", "leave_filter", "Leave / clear the filter", show=False),
    ]

    class Items(Message):
        def __init__(self, items: list, number: int) -> None:
            super().__init__()
            self.items = items
            self.number = number  # the load that read them (KnowledgeScreen.loads)

    class Detail(Message):
        def __init__(self, item) -> None:
            super().__init__()
            self.item = item

    class Saved(Message):
        def __init__(self, decision) -> None:
            super().__init__()
            self.decision = decision

    def __init__(self) -> None:
        super().__init__()
        self.items: list = []
        self.rows: list = []  # option index -> item (None for a subject heading)
        self.history = False
        self.detail = None  # the highlighted item as last loaded: it lags a move by one worker's answer
        # `e`/`o` pressed before the highlighted item's detail came (keys that arrive together):
        # (its id, the action), run when that item's detail arrives, never on the item left.
        self.after_detail: tuple[int, Callable[[], None]] | None = None
        self.loads = 0  # lists asked for so far
        # The first load that reads the list after a save: a list read before it (the form closing
        # asks for one while the save runs) may not hold the saved item yet.
        self.saved_from = 0

    def compose(self) -> ComposeResult:
        yield LiteralInput(placeholder="/ filter by words, subject or type…", id="knowledge-filter", classes="hidden",
                           select_on_focus=False)  # / again refines the filter (as the search query)
        yield Static("", id="knowledge-counts", classes="one-line")
        with Horizontal(id="knowledge-body"):
            yield OptionList(id="items")
            with VerticalScroll(id="item-scroll"):
                yield Static("no knowledge yet: add an item with a", id="item-detail")
        yield StatusBar()
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#items", OptionList).focus()
        self.load()

    def on_screen_resume(self) -> None:
        self.load()

    # -- loading -------------------------------------------------------------------------
    def load(self) -> None:
        self.loads += 1
        self._load(self.loads)

    @work(thread=True, exclusive=True, exit_on_error=False, group="knowledge-load")
    def _load(self, number: int) -> None:
        items = self.app.service.knowledge_list(current_only=not self.history, limit=LIST_LIMIT)
        self.post_unless_cancelled(self.Items(items, number))

    @on(Items)
    def _items(self, message: Items) -> None:
        self.items = message.items
        self._render_list(message.number)

    def _render_list(self, number: int | None = None) -> None:
        """number: the load whose items these are (None: the same items, filtered anew)."""
        words = self.query_one("#knowledge-filter", Input).value.lower().split()
        shown = [i for i in self.items
                 if all(w in f"{i.title} {i.body} {subject_of(i)} {i.type}".lower() for w in words)]
        shown.sort(key=lambda i: (subject_of(i).lower(), i.type, -i.importance))
        options, self.rows = [], []
        subject = None
        for item in shown:
            if subject_of(item) != subject:
                subject = subject_of(item)
                options.append(Option(literal(f"▸ {subject}"), disabled=True))
                self.rows.append(None)
            mark = {"confirmed": "✓", "draft": "·", "superseded": "×"}.get(item.status, "?")
            options.append(Option(literal(f"  {mark} {item.type:<11} {item.title}"), id=str(item.item_id)))
            self.rows.append(item)
        option_list = self.query_one("#items", OptionList)
        # The item the cursor was on stays under it when the list is read again (after a save, a
        # filter, history): the list went back to its first item.
        was = option_list.highlighted
        kept = was if was is not None and was < len(option_list.options) else None
        was_id = option_list.get_option_at_index(kept).id if kept is not None else None
        option_list.set_options(options)
        first = next((n for n, row in enumerate(self.rows) if row is not None), None)
        wanted = self.app.pending_item
        found = wanted is not None and any(row is not None and row.item_id == wanted for row in self.rows)
        if wanted is not None and (found or (number is not None and number >= self.saved_from)):
            self.app.pending_item = None  # shown, or not in a list read after the save (filtered out)
        if not found:
            wanted = int(was_id) if was_id else None
        if wanted is not None:
            first = next((n for n, row in enumerate(self.rows) if row is not None and row.item_id == wanted), first)
        if first is not None:
            option_list.highlighted = first
        counts: dict[str, int] = {}
        for item in shown:
            counts[item.status] = counts.get(item.status, 0) + 1
        summary = "  ".join(f"{status} {n}" for status, n in sorted(counts.items()))
        self.query_one("#knowledge-counts", Static).update(
            f"{len(shown)} items{' (with history)' if self.history else ''}  ·  {summary or 'none'}")
        if first is None:
            self.detail = None
            self.query_one("#item-detail", Static).update("no knowledge items here: a adds one")

    @on(OptionList.OptionHighlighted, "#items")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        item = self.rows[event.option_index] if 0 <= event.option_index < len(self.rows) else None
        if item is not None:
            self.load_detail(item.item_id)

    @work(thread=True, exclusive=True, exit_on_error=False, group="knowledge-detail")
    def load_detail(self, item_id: int) -> None:
        self.post_unless_cancelled(self.Detail(self.app.service.knowledge_item(item_id)))

    @on(Detail)
    def _detail(self, message: Detail) -> None:
        self.detail = message.item
        self.query_one("#item-detail", Static).update(literal(item_detail(message.item), lines=True))
        if self.after_detail is not None and self.after_detail[0] == message.item.item_id:
            action, self.after_detail = self.after_detail[1], None
            action()

    def _on_highlighted_item(self, action: Callable[[], None]) -> None:
        """Run action on the highlighted item's detail: now when it is loaded, else when it arrives."""
        index = self.query_one("#items", OptionList).highlighted
        row = self.rows[index] if index is not None and 0 <= index < len(self.rows) else None
        if row is not None and (self.detail is None or self.detail.item_id != row.item_id):
            self.after_detail = (row.item_id, action)
            return
        self.after_detail = None
        action()

    # -- keys ----------------------------------------------------------------------------
    def action_filter(self) -> None:
        field = self.query_one("#knowledge-filter", Input)
        field.remove_class("hidden")
        field.focus()

    def action_leave_filter(self) -> None:
        field = self.query_one("#knowledge-filter", Input)
        if field.has_focus:
            self.query_one("#items", OptionList).focus()
        elif field.value:
            field.value = ""
        else:
            field.add_class("hidden")

    @on(Input.Changed, "#knowledge-filter")
    def _filter_changed(self) -> None:
        self._render_list()

    def action_history(self) -> None:
        self.history = not self.history
        self.load()

    def action_source(self) -> None:
        self._on_highlighted_item(self._open_source)

    def _open_source(self) -> None:
        if self.detail is not None and self.detail.source_note_id:
            self.app.open_note(self.detail.source_note_id)
        elif self.detail is not None:
            self.notify(f"this item comes from {self.detail.source_type}, not from a note")

    def action_add(self) -> None:
        self.app.push_screen(KnowledgeForm(None), self._form_done)

    def action_edit(self) -> None:
        self._on_highlighted_item(self._edit)

    def _edit(self) -> None:
        if self.detail is None:
            return
        if not self.detail.is_current:
            self.notify("this item has ended; edit the current one in its chain", severity="warning")
            return
        self.app.push_screen(KnowledgeForm(self.detail), self._form_done)

    def _form_done(self, result: dict | None) -> None:
        if result:
            self.save(result)

    @work(thread=True, exclusive=True, exit_on_error=False, group="knowledge-save")
    def save(self, result: dict) -> None:
        fields = dict(result["fields"])
        if result["item_id"] is None:
            decision = self.app.service.knowledge_submit({"schema": service_api().KNOWLEDGE_SCHEMA, **fields}, source="owner")
        else:
            decision = self.app.service.knowledge_edit(result["item_id"], **fields)
        self.post_message(self.Saved(decision))

    @on(Saved)
    def _saved(self, message: Saved) -> None:
        decision = message.decision
        saved = decision.decision in ("add", "supersede", "update")
        self.notify(f"{decision.decision}: {decision.reason}", severity="information" if saved else "warning")
        if saved and decision.item_id is not None:
            self.app.pending_item = decision.item_id  # the list shows what was saved under the cursor
            self.saved_from = self.loads + 1
        self.load()
        self.app.refresh_status()
