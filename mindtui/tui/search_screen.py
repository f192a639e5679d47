"""Search mode: results while typing.

Each keystroke starts a full-text search at once (a few ms); after a pause of DEBOUNCE_S the
hybrid search replaces its results once the model is ready. A newer query supersedes older
work: workers are exclusive per kind and every answer carries the generation of the query it
belongs to, so a late answer to an old query is dropped. Opening a result logs the search
(the search graph learns from what the user acted on, not from every prefix typed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from mindtui.tui.key_footer import KeyFooter
from mindtui.tui.lazy import service_api
from mindtui.tui.literal import LiteralInput, literal, visible
from mindtui.tui.result_list import ResultList
from mindtui.tui.status import StatusBar
from mindtui.tui.worker_errors import ReportsWorkerErrors

if TYPE_CHECKING:
    from mindtui.service import CancelToken, SearchResponse, SearchResult

DEBOUNCE_S = 0.15
RESULT_LIMIT = 20  # one page: the cursor on the last row loads the next
# The count stops past this many notes ("20 of 10,000+"): counting every note of a word in most
# of a million chunks took 10.8 s, the first 10,001 0.4 s.
COUNT_AT_MOST = 10_000
FILTERS = (("type", "type, e.g. concept"), ("tag", "tag, e.g. pkm"), ("path", "path prefix"),
           ("kind", "notes or knowledge"))


def result_prompt(result: SearchResult, width: int) -> Text:
    """Three lines, each cut to the list's width (no wrapping: the list measures fast): title and
    type, the path, the snippet with the query's words highlighted (bold underline: visible with
    NO_COLOR and in 256 colours alike)."""
    room = max(20, width - 3)
    head = Text()
    if result.kind == "knowledge":  # a knowledge item, not a note: marked so
        head.append("◆ ", style="bold")
        room -= 2
    head.append(visible(result.title[:room]), style="bold")
    if result.note_type and len(result.title) + len(result.note_type) + 2 <= room:
        head.append(visible(f"  {result.note_type}"), style="italic")
    snippet = visible(result.snippet[:room])
    line = Text(snippet[:-1] + "…" if len(result.snippet) > room else snippet)
    for start, end in result.highlights:
        if start < len(line):
            line.stylize("bold underline", start, min(end, len(line)))
    where = result.path if result.kind != "knowledge" else f"knowledge item #{result.item_id}  {result.path}"
    text = Text("\n", no_wrap=True, overflow="ellipsis").join([head, Text(visible(where[:room]), style="dim"), line])
    text.no_wrap, text.overflow = True, "ellipsis"
    return text


def explain_text(result: SearchResult) -> str:
    """Each list's rank and score, fusion, weights, graph gain and rerank, one per line."""
    explain = result.explain
    lines = [visible(result.title), f"score {result.score:.4f}", ""]
    for name, label in (("fts", "full text"), ("vector", "vector"), ("title", "name")):
        entry = explain.get(name)
        if entry:
            values = "  ".join(f"{k} {v}" for k, v in entry.items())
            lines.append(f"{label:<10}{values}")
        elif name == "vector" and explain.get("not_embedded"):
            lines.append(f"{label:<10}- no vector yet: its full-text score stands in")
        else:
            lines.append(f"{label:<10}-")
    if "fusion" in explain:
        lines.append(f"fusion    {explain['fusion']} → {explain.get('fused', '')}")
    if "retriever_weight" in explain:
        lines.append(f"weight    ×{explain['retriever_weight']} → {explain.get('weighted', '')}")
    graph = explain.get("graph")
    if graph:
        lines.append(f"graph     +{graph.get('gain')} from {len(graph.get('from', []))} note(s)")
    memory = explain.get("memory")
    if memory:  # usage memory: why, in words (an agent is never told a past query)
        lines.append(f"memory    +{memory.get('lent', '')} {memory.get('why', '')}")
    if explain.get("exact"):
        lines.append("exact     the query names this note")
    if explain.get("rerank"):
        lines.append(f"rerank    rank {explain['rerank'].get('rank')}  score {explain['rerank'].get('score')}")
    return "\n".join(lines)


class SearchScreen(ReportsWorkerErrors, Screen):
    BINDINGS = [
        Binding("ctrl+f", "toggle_filters", "Filters"),
        Binding("ctrl+r", "toggle_explain", "Explain"),
        Binding("escape", "escape", "Back", show=False),
        Binding("slash", "focus_query", "Query", show=False),
        Binding("down", "focus_results", "Results", show=False),
        Binding("enter", "open", "Open", show=False),
    ]
    CSS_PATH = "search_screen.tcss"
    KEYED_WIDGETS = (ResultList,)  # its keys are listed with the screen's (help, README)
    PALETTE = [("Search: toggle filters", "filter by type, tag and path (ctrl+f)", "toggle_filters"),
               ("Search: toggle explain", "why the selected result ranks where it does (ctrl+r)", "toggle_explain"),
               ("Search: open the result", "open the selected result (Enter)", "open")]

    class Answer(Message):
        def __init__(self, generation: int, kind: str, query: str, response: SearchResponse) -> None:
            super().__init__()
            self.generation, self.kind, self.query, self.response = generation, kind, query, response

    class Counted(Message):
        def __init__(self, generation: int, total: int) -> None:
            super().__init__()
            self.generation, self.total = generation, total  # how many notes the words match

    def __init__(self) -> None:
        super().__init__()
        self.generation = 0
        self.shown: tuple[int, str] | None = None  # (generation, kind) on screen
        self.results: list[SearchResult] = []
        self.query_text = ""
        self.notices: list[str] = []
        self._empty = ""  # what the notice line says while there are no results
        self._debounce: Timer | None = None
        self._hybrid_waits_for_model = False
        self._open_when_answered: int | None = None  # Enter before the query's first answer: its generation
        self.limit = RESULT_LIMIT  # how many results the query asks for: grows as the cursor reaches the end
        self.total: int | None = None
        self._loading_more = False
        self._cancel: CancelToken = service_api().CancelToken()  # this generation's searches: the next cancels them

    def compose(self) -> ComposeResult:
        # Back in the query (Up above the first row, Esc from the list) the cursor stays after
        # it: a word typed then refines the query (selected on focus, the first letter replaced
        # it); Esc in the query clears it.
        yield LiteralInput(placeholder="search your notes (words or meaning)…", id="query", select_on_focus=False)
        with Horizontal(id="filters", classes="hidden"):
            for name, hint in FILTERS:
                yield LiteralInput(placeholder=hint, id=f"filter-{name}", classes="filter", select_on_focus=False)
        yield Static("", id="notice", classes="one-line")
        with Horizontal(id="search-body"):
            yield ResultList(id="results")
            yield Static("", id="explain", classes="hidden")
        yield StatusBar()
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#query", Input).focus()
        self.watch(self.app, "model_state", self._model_state_changed, init=False)
        self.watch(self.app, "service_open", self._service_opened, init=False)
        self.watch(self.app, "vault_generation", self._vault_changed, init=False)

    def on_screen_resume(self) -> None:
        """Back in Search mode, the user wants to type: the query field takes the keys."""
        self.query_one("#query", Input).focus()

    # -- what the user typed -------------------------------------------------------------
    def _options(self, mode: str) -> dict:
        """The SearchOptions of the query as it stands, as keywords: the worker makes them (on the
        event loop the first keystroke would import the search engine, ~60 ms of keys waiting)."""
        values = {name: self.query_one(f"#filter-{name}", Input).value.strip() or None for name, _ in FILTERS}
        kind = values["kind"].lower() if values["kind"] else None
        if kind not in (None, "notes", "knowledge"):
            kind = "knowledge" if "knowledge".startswith(kind) else "notes" if "notes".startswith(kind) else None
        return dict(mode=mode, limit=self.limit, note_type=values["type"], tag=values["tag"],
                    path=values["path"], kind=kind, log=False, wait_for_model=False)

    @on(Input.Changed)
    def _query_changed(self, event: Input.Changed) -> None:
        self.search_now()

    def search_now(self) -> None:
        self.generation += 1
        self._cancel.cancel()  # what runs for the query typed past stops (at 1M chunks: 0.1-0.8 s of a core)
        self._cancel = service_api().CancelToken()
        self.query_text = self.query_one("#query", Input).value
        self.limit, self.total, self._loading_more = RESULT_LIMIT, None, False
        if self._debounce is not None:
            self._debounce.stop()
        if not self.query_text.strip():
            self.shown = None
            self._show([], [], "type to search · ctrl+f filters · F1 help")
            return
        generation, query = self.generation, self.query_text
        self.run_fts(generation, query, self._options("fts"))
        def hybrid() -> None:
            if self.app.service_open:  # else it runs when the service is open (_service_opened)
                self.run_hybrid(generation, query, self._options("hybrid"))

        if self.app.debounce_s > 0:
            self._debounce = self.set_timer(self.app.debounce_s, hybrid)
        else:
            self.call_after_refresh(hybrid)

    def _model_state_changed(self, state: str) -> None:
        if state == "ready" and self._hybrid_waits_for_model and self.query_text.strip():
            self._hybrid_waits_for_model = False
            self.run_hybrid(self.generation, self.query_text, self._options("hybrid"))

    def _service_opened(self, service_open: bool) -> None:
        if service_open and self.query_text.strip():
            self.run_hybrid(self.generation, self.query_text, self._options("hybrid"))

    def _vault_changed(self, generation: int) -> None:
        """The live vault imported changes: the query's results may be different now."""
        if self.query_text.strip():
            self.search_now()

    # -- workers -------------------------------------------------------------------------
    # Each search takes its generation's token (read on the UI thread when it is started):
    # Cancelled from one means the query was typed past, and nothing is posted.
    def run_fts(self, generation: int, query: str, options: dict, count: bool = True) -> None:
        self._run_fts(generation, query, options, count, self._cancel)

    @work(thread=True, exclusive=True, exit_on_error=False, group="search-fts")
    def _run_fts(self, generation: int, query: str, options: dict, count: bool, cancel: CancelToken) -> None:
        try:
            response = self.app.search_full_text(query, service_api().SearchOptions(**options), cancel)
        except service_api().Cancelled:
            return
        if not get_current_worker().is_cancelled:
            self.post_message(self.Answer(generation, "fts", query, response))
            if count:  # after the results: they never wait for the count
                self.app.call_from_thread(self.run_count, generation, query, options)

    def run_count(self, generation: int, query: str, options: dict) -> None:
        self._run_count(generation, query, options, self._cancel)

    @work(thread=True, exclusive=True, exit_on_error=False, group="search-count")
    def _run_count(self, generation: int, query: str, options: dict, cancel: CancelToken) -> None:
        if generation != self.generation:
            return  # typed past already
        try:
            total = self.app.count_full_text(query, service_api().SearchOptions(**options), COUNT_AT_MOST, cancel)
        except service_api().Cancelled:
            return
        if not get_current_worker().is_cancelled:
            self.post_message(self.Counted(generation, total))

    def run_hybrid(self, generation: int, query: str, options: dict) -> None:
        self._run_hybrid(generation, query, options, self._cancel)

    @work(thread=True, exclusive=True, exit_on_error=False, group="search-hybrid")
    def _run_hybrid(self, generation: int, query: str, options: dict, cancel: CancelToken) -> None:
        try:
            response = self.app.service.search(query, service_api().SearchOptions(**options), cancel=cancel)
        except service_api().Cancelled:
            return
        if not get_current_worker().is_cancelled:
            self.post_message(self.Answer(generation, "hybrid", query, response))

    @work(thread=True, exit_on_error=False, group="search-log")
    def record(self, query: str, note_ids: list[str], opened: str | None = None) -> None:
        """Log the search the user acted on; a note opened from it teaches usage memory too."""
        if opened is None:  # a knowledge item: the search graph learns from its results, the memory does not
            notices = self.app.service.record_search(query, "hybrid", note_ids)
        else:
            recorded = self.app.service.record_open(query, "hybrid", note_ids, opened, "enter")
            if recorded.search_id is not None:
                self.app.search_trail = (recorded.search_id, recorded.note_id, note_ids)
            notices = recorded.notices
        for notice in notices:
            self.app.call_from_thread(self.notify, notice, severity="warning")

    @on(Counted)
    def _counted(self, message: Counted) -> None:
        if message.generation == self.generation:
            self.total = message.total
            if self.results:
                self._show_count()

    @on(Answer)
    def _answer(self, message: Answer) -> None:
        if message.generation != self.generation:
            return  # an answer to a query the user has typed past
        if message.kind == "fts" and self.shown == (message.generation, "hybrid"):
            self._show_count()
            return  # the hybrid answer came first: keep it (and the count the full text brought)
        if message.kind == "hybrid":
            self._hybrid_waits_for_model = self.app.model_state in ("not loaded", "loading")
        self.shown = (message.generation, message.kind)
        self._loading_more = False
        notices = list(message.response.notices)
        if message.kind == "fts" and self.app.model_state in ("not loaded", "loading"):
            notices.append("the embedding model is loading; full-text results for now")
        self._show(message.response.results, notices, "" if message.response.results else "no results")
        if self._open_when_answered == message.generation:
            self._open_when_answered = None
            self.action_open()

    def _show(self, results: list[SearchResult], notices: list[str], empty: str) -> None:
        self.results = results
        self.notices = list(dict.fromkeys(notices))
        self._empty = empty
        self._render_results()
        self._show_count()
        self._update_explain()

    def _show_count(self) -> None:
        """The notice line: the count (or what stands for no results), hidden filters, notices."""
        notice = self.query_one("#notice", Static)
        parts = [self.count_text()] if self.results else [self._empty] if self._empty else []
        notice.update(literal(" · ".join([*parts, *self.hidden_filters(), *self.notices])))
        notice.set_class(bool(self.notices), "degraded")

    def hidden_filters(self) -> list[str]:
        """"filtered: type concept, path Projekte/" while the filter row is hidden: a filter
        still narrows every result, and nothing else on screen said so."""
        if not self.query_one("#filters").has_class("hidden"):
            return []
        active = [f"{name} {value}" for name, _ in FILTERS
                  if (value := self.query_one(f"#filter-{name}", Input).value.strip())]
        return [f"filtered: {', '.join(active)} (ctrl+f)"] if active else []

    def count_text(self) -> str:
        """"20 of 3,412": the results shown and how many notes the words match (hybrid results
        may add notes close in meaning that no word matches: then just how many are shown)."""
        shown = len(self.results)
        if self.total is not None and self.total > COUNT_AT_MOST and shown <= COUNT_AT_MOST:
            return f"{shown:,} of {COUNT_AT_MOST:,}+"
        if self.total is not None and self.total >= shown:
            return f"{shown:,} of {self.total:,}"
        return f"{shown:,} results"

    def _load_more(self) -> None:
        """The cursor is on the last row: ask for the next page (as the answer on screen was
        made: hybrid or full text), unless the last answer was short of its page already."""
        if self._loading_more or self.shown is None or self.shown[0] != self.generation:
            return
        if len(self.results) < self.limit or (self.total is not None and self.shown[1] == "fts"
                                              and len(self.results) >= self.total):
            return
        self._loading_more = True
        self.limit += RESULT_LIMIT
        kind = self.shown[1]
        run = self.run_fts if kind == "fts" else self.run_hybrid
        extra = {"count": False} if kind == "fts" else {}
        run(self.generation, self.query_text, self._options(kind), **extra)

    def _list_width(self) -> int:
        """The result list's width from the screen's (the list's own size lags a layout behind)."""
        panel = self.query_one("#explain")
        beside = 0 if panel.has_class("hidden") else int(panel.styles.width.value)
        return self.size.width - beside - 2  # the scrollbar

    def _render_results(self) -> None:
        option_list = self.query_one("#results", OptionList)
        highlighted = option_list.highlighted
        width = self._list_width()
        option_list.set_options([Option(result_prompt(r, width), id=r.log_key) for r in self.results])
        if self.results:
            option_list.highlighted = min(highlighted or 0, len(self.results) - 1)

    def on_resize(self) -> None:
        if self.results:
            self._render_results()

    # -- keys ----------------------------------------------------------------------------
    def action_toggle_filters(self) -> None:
        filters = self.query_one("#filters")
        filters.toggle_class("hidden")
        if not filters.has_class("hidden"):
            self.query_one("#filter-type", Input).focus()
        else:
            self.query_one("#query", Input).focus()
        self._show_count()

    def action_toggle_explain(self) -> None:
        self.query_one("#explain").toggle_class("hidden")
        self._render_results()
        self._update_explain()

    @on(OptionList.OptionHighlighted, "#results")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self._update_explain()
        if event.option_index == len(self.results) - 1:
            self._load_more()

    @on(ResultList.LeftAtTop)
    def _left_at_top(self) -> None:
        self.set_focus(self.query_one("#query", Input))

    def _update_explain(self) -> None:
        panel = self.query_one("#explain", Static)
        if panel.has_class("hidden"):
            return
        result = self.selected()
        panel.update(literal(explain_text(result), lines=True) if result else "no result selected")

    def selected(self) -> SearchResult | None:
        index = self.query_one("#results", OptionList).highlighted
        return self.results[index] if index is not None and 0 <= index < len(self.results) else None

    def action_escape(self) -> None:
        """Esc leaves a filter before it leaves anything else; then it clears the query."""
        focused = self.focused
        if isinstance(focused, Input) and focused.has_class("filter"):
            self.query_one("#query", Input).focus()
        elif focused is self.query_one("#results"):
            self.query_one("#query", Input).focus()
        elif self.query_text:
            self.query_one("#query", Input).value = ""

    def action_focus_query(self) -> None:
        self.query_one("#query", Input).focus()

    def action_focus_results(self) -> None:
        # set_focus at once, not focus() (which moves it a message later): the Downs that came in
        # the same terminal read are dispatched before that message and would reach the query.
        if self.results:
            self.set_focus(self.query_one("#results", OptionList))

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_open()

    @on(OptionList.OptionSelected, "#results")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.action_open()

    def action_open(self) -> None:
        if self.shown is None or self.shown[0] != self.generation:
            # Typed and pressed Enter before this query's first answer (the list shows the last
            # query's, or nothing): open its first result when it comes.
            self._open_when_answered = self.generation if self.query_text.strip() else None
            return
        result = self.selected() or (self.results[0] if self.results else None)
        if result is None:
            return
        self.app.search_trail = None
        self.record(self.query_text, [r.log_key for r in self.results],
                    result.note_id if result.kind == "note" else None)
        if result.kind == "knowledge":
            self.app.open_item(result.item_id)
        else:
            self.app.open_note(result.note_id)
