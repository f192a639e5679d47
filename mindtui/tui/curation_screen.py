"""Curation mode: the queue of things mindtui is unsure about, most important first, one key
per action. The card's own actions come from the service (a kind added later brings its
actions along); `u` undoes the last action, file change included. An action that writes vault
files beyond one added link (marked `confirm`) shows the service's dry run of its writes first
and applies on `y` (ConfirmWrites); database-only answers take their one key.
"""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.events import Key
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from mindtui.tui.key_footer import KeyFooter
from mindtui.tui.confirm_writes import ConfirmWrites
from mindtui.tui.literal import literal, visible
from mindtui.tui.picker import Choice, NoteSearchPicker, PickerScreen, TextPrompt
from mindtui.tui.status import StatusBar, cut
from mindtui.tui.worker_errors import ReportsWorkerErrors

QUEUE_LIMIT = 500


SHORT_KINDS = {"unresolved_link": "unresolved", "ambiguous_link": "ambiguous", "link_suggestion": "suggested",
               "mass_edit": "mass edit", "unresolved_entity": "entity", "duplicate": "dup",
               "contradiction": "contra", "missing_quote": "quote", "gap_question": "gap", "stale": "stale"}


def counts_header(counts: dict[str, int], kind: str | None, shown: int, width: int) -> str:
    """The queue's header in `width` columns: every kind with its count, the names abbreviated
    (then the spacing) when they do not fit, never a kind left out."""
    total = sum(counts.values())
    if kind:
        for name in (kind.replace("_", " "), SHORT_KINDS.get(kind, kind)):
            for hint in (" (ctrl+t: next kind)", " (ctrl+t)", ""):
                header = f"showing {name}: {shown} of {total} open{hint}"
                if len(header) <= width:
                    return header
        return cut(header, width)
    present = sorted((k, n) for k, n in counts.items() if n)
    if not present:
        return f"{total} open  ·  nothing to decide"
    tries = [("  ·  ", "  ", lambda k: k.replace("_", " ")), (" · ", "  ", lambda k: SHORT_KINDS.get(k, k)),
             (" ", " ", lambda k: SHORT_KINDS.get(k, k)), (" ", " ", lambda k: SHORT_KINDS.get(k, k)[:3])]
    for after_total, between, name in tries:
        header = f"{total} open{after_total}" + between.join(f"{name(k)} {n}" for k, n in present)
        if len(header) <= width:
            return header
    return cut(header, width)


def card_prompt(card) -> str:
    return f"{card.importance:.2f}  {card.kind.replace('_', ' ')}\n  {visible(card.subject)}"


def card_detail(card) -> str:
    lines = [f"#{card.item_id}  {card.kind.replace('_', ' ')}  ·  importance {card.importance:.2f}  ·  {card.status}",
             "", visible(card.subject), "", card.description]
    links = card.payload.get("links") or [{}]
    evidence = card.payload.get("evidence") or links[0].get("evidence")
    if evidence:
        lines += ["", f"“{str(evidence).strip()}”"]
    lines += ["", "keys:"] + [f"  {action['key']}  {action['name']}: {action['description']}" for action in card.actions]
    lines += ["  u  undo the last action"]
    return "\n".join(lines)


class CurationScreen(ReportsWorkerErrors, Screen):
    CSS_PATH = "curation_screen.tcss"
    KEY_NOTES = [("c, r, d, p, a, s, i, k, l, t, m, e", "the selected card's actions: each kind lists its own "
                  "(the card shows them; README Curation queue)")]
    PALETTE = [("Curation: undo", "undo the last curation action and its file change (u)", "undo"),
               ("Curation: next kind", "show one kind of card at a time (ctrl+t)", "next_kind"),
               ("Curation: reload", "read the queue again (ctrl+l)", "reload")]
    BINDINGS = [
        Binding("u", "undo", "Undo"),
        Binding("ctrl+t", "next_kind", "Kind filter"),
        Binding("ctrl+l", "reload", "Reload", show=False),
    ]

    class Queue(Message):
        def __init__(self, cards: list, counts: dict[str, int], select: int | None) -> None:
            super().__init__()
            self.cards, self.counts, self.select = cards, counts, select

    class Planned(Message):
        def __init__(self, item_id: int, action: str, args: dict, writes: list) -> None:
            super().__init__()
            self.item_id, self.action, self.args, self.writes = item_id, action, args, writes

    class Done(Message):
        def __init__(self, outcome) -> None:
            super().__init__()
            self.outcome = outcome

    def __init__(self) -> None:
        super().__init__()
        self.cards: list = []
        self.counts: dict[str, int] = {}
        self.kind: str | None = None
        self.queue_loaded = False
        self._card_asked: tuple[str, str] | None = None  # a palette's card action before the queue came

    def compose(self) -> ComposeResult:
        yield Static("", id="curation-counts", classes="one-line")
        with Horizontal(id="curation-body"):
            yield OptionList(id="cards")
            with VerticalScroll(id="card-scroll"):
                yield Static("the queue is empty", id="card-detail")
        yield StatusBar()
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#cards", OptionList).focus()
        self.load()

    def on_screen_resume(self) -> None:
        self.load()

    # -- the queue -----------------------------------------------------------------------
    @work(thread=True, exclusive=True, exit_on_error=False, group="curation-load")
    def load(self, select: int | None = None) -> None:
        service = self.app.service
        cards = service.curation_list(kind=self.kind, status="open", limit=QUEUE_LIMIT)
        self.post_unless_cancelled(self.Queue(cards, service.curation_counts(), select))

    @on(Queue)
    def _queue(self, message: Queue) -> None:
        option_list = self.query_one("#cards", OptionList)
        keep = option_list.highlighted
        self.cards, self.counts = message.cards, message.counts
        option_list.set_options([Option(literal(card_prompt(c), lines=True), id=str(c.item_id)) for c in self.cards])
        if self.cards:
            index = next((i for i, c in enumerate(self.cards) if c.item_id == message.select), None)
            option_list.highlighted = index if index is not None else min(keep or 0, len(self.cards) - 1)
        self._show_header()
        self._show_detail()
        self.queue_loaded = True
        if self._card_asked is not None:
            kind, name = self._card_asked
            self._card_asked = None
            self.action_card(kind, name)

    def _show_header(self) -> None:
        header = counts_header(self.counts, self.kind, len(self.cards), self.size.width - 2)
        self.query_one("#curation-counts", Static).update(header)

    def on_resize(self) -> None:
        self._show_header()

    @on(OptionList.OptionHighlighted, "#cards")
    def _highlighted(self) -> None:
        self._show_detail()

    def selected(self):
        index = self.query_one("#cards", OptionList).highlighted
        return self.cards[index] if index is not None and 0 <= index < len(self.cards) else None

    def _show_detail(self) -> None:
        card = self.selected()
        detail = literal(card_detail(card), lines=True) if card else "the queue is empty"
        self.query_one("#card-detail", Static).update(detail)

    # -- actions -------------------------------------------------------------------------
    def on_key(self, event: Key) -> None:
        """A card's action keys come with the card: look the key up among its actions."""
        if isinstance(self.focused, Input) or not event.character:
            return
        card = self.selected()
        if card is None:
            return
        action = next((a for a in card.actions if a["key"] == event.character), None)
        if action is None:
            return
        event.stop()
        event.prevent_default()
        self._start(card, action)

    def _start(self, card, action: dict) -> None:
        """Ask for the action's required arguments one after another (a note: the candidates of
        an ambiguous link, else a search; text: a prompt), then resolve the card."""
        needed = [arg for arg in action["args"] if arg.get("required", True)]
        self._collect(card, action, needed, {})

    def _collect(self, card, action: dict, needed: list[dict], collected: dict) -> None:
        if not needed and action.get("confirm"):
            self.preview(card.item_id, action["name"], collected)  # its files first, then ConfirmWrites
            return
        if not needed:
            self.resolve(card.item_id, action["name"], collected)
            return
        arg, rest = needed[0], needed[1:]

        def got(value: str | None) -> None:
            if value:
                self._collect(card, action, rest, {**collected, arg["name"]: value})

        title = f"{action['name']}: {arg['description']}"
        if arg["type"] != "note":
            self.app.push_screen(TextPrompt(title), got)
            return
        candidates = card.payload.get("candidates") or []
        if candidates:
            choices = [Choice(c["note_id"], f"{c['title']}  ({c['path']})") for c in candidates]
            self.app.push_screen(PickerScreen(title, choices), got)
        else:
            renamed = card.payload.get("renamed_to") or {}  # a link to a renamed note: its title finds it
            initial = renamed.get("title") or card.payload.get("target") or card.payload.get("name") or ""
            self.app.push_screen(NoteSearchPicker(title, initial), got)

    @work(thread=True, exclusive=True, exit_on_error=False, group="curation-act")
    def resolve(self, item_id: int, action: str, args: dict) -> None:
        self.post_message(self.Done(self.app.service.curation_resolve(item_id, action, **args)))

    @work(thread=True, exclusive=True, exit_on_error=False, group="curation-act")
    def preview(self, item_id: int, action: str, args: dict) -> None:
        writes = self.app.service.curation_preview(item_id, action, **args)
        self.post_message(self.Planned(item_id, action, args, writes))

    @on(Planned)
    def _planned(self, message: Planned) -> None:
        def answered(apply: bool | None) -> None:
            if apply:
                self.resolve(message.item_id, message.action, message.args)

        self.app.push_screen(ConfirmWrites(f"{message.action} card #{message.item_id}", message.writes), answered)

    @work(thread=True, exclusive=True, exit_on_error=False, group="curation-act")
    def undo(self) -> None:
        outcome = self.app.service.curation_undo()
        if outcome is None:
            self.app.call_from_thread(self.notify, "nothing to undo")
            return
        self.post_message(self.Done(outcome))

    @on(Done)
    def _done(self, message: Done) -> None:
        outcome = message.outcome
        self.notify(" ".join([outcome.message, *outcome.notices]))
        self.load()
        self.app.refresh_status()

    def action_undo(self) -> None:
        self.undo()

    def action_reload(self) -> None:
        self.load()

    def action_next_kind(self) -> None:
        kinds = sorted(k for k, n in self.counts.items() if n)
        if not kinds:
            self.kind = None
        elif self.kind is None:
            self.kind = kinds[0]
        else:
            later = [k for k in kinds if k > self.kind]
            self.kind = later[0] if later else None
        self.load()

    def help_rows(self) -> list[tuple[str, str]]:
        """The selected card's own keys (each kind brings its actions)."""
        card = self.selected()
        return [(action["key"], f"{action['name']}: {action['description']}") for action in card.actions] if card else []

    def action_card(self, kind: str, name: str) -> None:
        """A card action from the palette: on the selected card if it is of that kind, else on
        the first open card of the kind."""
        if not self.queue_loaded:
            self._card_asked = (kind, name)
            return
        card = self.selected()
        if card is None or card.kind != kind:
            card = next((c for c in self.cards if c.kind == kind), None)
        action = next((a for a in card.actions if a["name"] == name), None) if card else None
        if card is None or action is None:
            self.notify(f"no open {kind.replace('_', ' ')} card here", severity="warning")
            return
        self.query_one("#cards", OptionList).highlighted = self.cards.index(card)
        self._start(card, action)
