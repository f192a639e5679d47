"""The mindtui TUI: one Textual app with a mode per screen (Search, Note, Curation, Jobs).

Every database and model call runs in a thread worker that posts a message; handlers on the
event loop own the state. The app owns the service (opened for the owner) and the status
line every screen shows; it loads the embedding model in the background after the first paint.
"""

from __future__ import annotations

import threading
from functools import partial
from typing import TYPE_CHECKING, Iterable

from textual import on, work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen

from mindtui.config import Settings
from mindtui.tui.curation_screen import CurationScreen
from mindtui.tui.early_search import EarlySearch
from mindtui.tui.help_screen import HelpScreen
from mindtui.tui.jobs_screen import JobsScreen
from mindtui.tui.key_order import KeepsKeyOrder
from mindtui.tui.lazy import service_api
from mindtui.tui.literal import visible
from mindtui.tui.knowledge_screen import KnowledgeScreen
from mindtui.tui.note_screen import NoteScreen
from mindtui.tui.search_screen import DEBOUNCE_S, SearchScreen
from mindtui.tui.status import StatusInfo, status_line
from mindtui.tui.worker_errors import ReportsWorkerErrors, error_text, traceback_text

if TYPE_CHECKING:
    from mindtui.service import SearchResponse, Service

STATUS_INTERVAL_S = 2.0
WATCH_START_S = 2.0
WATCH_STOP_S = 2.0
MODE_KEYS = (("search", "f2", "Search"), ("note", "f3", "Note"), ("curation", "f4", "Curation"),
             ("jobs", "f5", "Jobs"), ("knowledge", "f6", "Knowledge"))


class StatusRead(Message):
    def __init__(self, info: StatusInfo) -> None:
        super().__init__()
        self.info = info


class ServiceOpened(Message):
    """The service is open (or failed to open: then `service` raises its error), posted from its worker."""


class VaultChanged(Message):
    """The live vault's watcher said something (see jobs.watch.VaultChange), posted from its thread."""

    def __init__(self, change) -> None:
        super().__init__()
        self.change = change


class MindtuiApp(KeepsKeyOrder, ReportsWorkerErrors, App[int]):
    TITLE = "mindtui"
    CSS_PATH = "app.tcss"
    MODES = {"search": SearchScreen, "note": NoteScreen, "curation": CurationScreen, "jobs": JobsScreen,
             "knowledge": KnowledgeScreen}
    DEFAULT_MODE = "search"
    ENABLE_COMMAND_PALETTE = True
    BINDINGS = [
        Binding("ctrl+q", "quit", "Quit", priority=True),
        Binding("q", "quit", "Quit", show=False),
        Binding("question_mark", "help", "Help"),
        Binding("f1", "help", "Help", show=False),
        *[Binding(key, f"mode('{mode}')", f"{label} mode", show=False) for mode, key, label in MODE_KEYS],
        # alt+N has a character: without priority a focused text field would type it.
        *[Binding(f"alt+{number}", f"mode('{mode}')", f"{label} mode", show=False, priority=True)
          for number, (mode, _, label) in enumerate(MODE_KEYS, start=1)],
        *[Binding(str(number), f"mode('{mode}')", f"{label} mode", show=False)
          for number, (mode, _, label) in enumerate(MODE_KEYS, start=1)],
    ]

    status_text: reactive[str] = reactive("mindtui · reading the database…")
    model_state: reactive[str] = reactive("not loaded")
    # True once the service is open: Search runs the hybrid search of the query typed before then
    # (a worker waiting for the service held a thread of the pool each; six held, the pool's size,
    # no full-text worker could start).
    service_open: reactive[bool] = reactive(False)
    # Bumped when the live vault's watcher has imported changes (the paths: vault_paths); Search
    # runs its query again, Note reloads its note in place when it changed.
    vault_generation: reactive[int] = reactive(0)

    def __init__(self, settings: Settings, *, service: "Service | None" = None, load_model: bool = True,
                 poll_status: bool = True, debounce_s: float = DEBOUNCE_S, watch_vault: bool = True) -> None:
        super().__init__()
        self.watch_vault = watch_vault
        self.watcher = None  # the live vault's VaultWatcher, once started
        self.vault_paths: frozenset[str] = frozenset()  # what the last import of the watcher brought in
        # Imports this app did not run (a `mindtui watch` service, `mindtui index` in another
        # terminal) are seen in the status poll: the newest import run that changed the index as
        # last read (None: not read yet), and the runs the app's own watcher announced.
        self._index_seen: int | None = None
        self._own_imports: set[int] = set()
        self.debounce_s = debounce_s
        self.settings = settings
        self._service = service
        self._service_ready = threading.Event()
        self._service_error: BaseException | None = None
        if service is not None:
            self._service_ready.set()
            self.set_reactive(MindtuiApp.service_open, True)
        self._owns_service = service is None
        self.early_search = EarlySearch(settings, self._service_ready)
        self.load_model = load_model
        self.poll_status = poll_status
        self.status_info: StatusInfo | None = None
        self.pending_note: str | None = None  # the note the Note mode shows next
        self.pending_item: int | None = None  # the knowledge item the Knowledge mode selects next
        self.errors: list[str] = []  # tracebacks of errors the app survived: written to stderr at exit
        self.jobs: list = []  # the JobProcess children started from the Jobs mode
        # The last search result opened with Enter: (search log id, its note id, the search's results).
        # Copying that note's link (y) or following a link out of it adds to the same search (usage memory).
        self.search_trail: tuple[int, str, list[str]] | None = None

    # -- lifetime ------------------------------------------------------------------------
    @property
    def service(self) -> "Service":
        """The service (owner). Opened by a worker after the first paint; workers that need it
        earlier wait for it (never the event loop: only workers touch the service)."""
        self._service_ready.wait()
        if self._service is None:
            raise self._service_error
        return self._service

    def search_full_text(self, query: str, options, cancel=None) -> "SearchResponse":
        """A full-text search; workers only. Before the service is open the lean full-text search
        answers (see tui.early_search). `cancel`: stops it (Cancelled) once the query is typed past."""
        early = self.early_search.search(query, options)
        return early if early is not None else self.service.search(query, options, cancel=cancel)

    def count_full_text(self, query: str, options, at_most: int, cancel=None) -> int:
        """How many notes the query's words match, counted up to at_most + 1; workers only."""
        early = self.early_search.count(query, options, at_most)
        return early if early is not None else self.service.search_count(query, options, at_most=at_most, cancel=cancel)

    def on_mount(self) -> None:
        if self._service is None:
            self.call_after_refresh(self.open_service)
        self.refresh_status()
        if self.poll_status:
            self.set_interval(STATUS_INTERVAL_S, self.refresh_status)
        if self.watch_vault:
            # Not at once: the first query typed gets the cores before the watcher's catch-up run.
            self.set_timer(WATCH_START_S, self.start_watching)
        if self.load_model:
            # After the first paint: the screen is up before llama.cpp starts reading the model.
            self.call_after_refresh(self.preload_model)

    def notify(self, message: str, *, title: str = "", severity="information", timeout: float | None = None,
               markup: bool = True) -> None:
        """Every notification shown as written (its markup argument is ignored): mindtui's carry
        note titles, paths and error texts, and none is styled on purpose (see tui.literal)."""
        super().notify(visible(message, lines=True), title=visible(title), severity=severity, timeout=timeout,
                       markup=False)

    def report_error(self, node, error: Exception) -> None:
        """An exception in a handler or action of `node` (see worker_errors.SurvivesErrors): said
        in a notification, kept for stderr; the app and the node go on."""
        self.errors.append(traceback_text(error))
        where = type(node).__name__.removesuffix("Screen") or "app"
        self.notify(f"{where}: {error_text(error)} (the app goes on; the details are printed when it exits)",
                    title="error", severity="error", timeout=10)

    def _handle_exception(self, error: Exception) -> None:
        """An error the app cannot survive (outside any handler): Textual exits with code 1; a job
        child started here is told to stop at its next safe point first (it would run on unseen)."""
        self.stop_jobs()
        super()._handle_exception(error)

    def stop_jobs(self) -> None:
        if self.watcher is not None:
            self.watcher.stop(timeout=0)  # its run in progress stops at its next safe point
        for process in self.jobs:
            if process.running:
                process.cancel()

    def on_unmount(self) -> None:
        self.early_search.close()
        if self.watcher is not None:
            # A run in progress is told to stop at its next safe point; quitting does not wait for it.
            self.watcher.stop(timeout=WATCH_STOP_S)
        if self._owns_service and self._service is not None:
            self._service.close()

    # -- workers -------------------------------------------------------------------------
    @work(thread=True, exclusive=True, exit_on_error=False, group="service")
    def open_service(self) -> None:
        """Import the service stack and open the database, off the event loop and after the
        first frame (see tui.lazy): start-up paints before it has read a byte."""
        try:
            self.early_search.prepare()
            from mindtui.service import Audience, Service

            self._service = Service(self.settings, audience=Audience.OWNER)
        except BaseException as exc:  # every waiting worker gets it; the notification says it once
            self._service_error = exc
            raise
        finally:
            self._service_ready.set()
            self.early_search.close()
            self.post_message(ServiceOpened())

    @on(ServiceOpened)
    def _service_opened(self) -> None:
        self.service_open = self._service is not None

    @work(thread=True, exclusive=True, exit_on_error=False, group="watch")
    def start_watching(self) -> None:
        """The live vault: changes on disk are imported in a job child while the app runs."""
        try:
            self.watcher = self.service.watch(lambda change: self.post_message(VaultChanged(change)))
        except (service_api().InputError, service_api().DatabaseError) as exc:  # no vault; an unwritable database
            self.call_from_thread(self.notify, f"the vault is not watched: {exc}", severity="warning")

    @on(VaultChanged)
    def _vault_changed(self, message: VaultChanged) -> None:
        change = message.change
        if change.kind == "imported":
            self._own_imports.add((change.report or {}).get("run_id") or 0)
            self.vault_paths = change.paths
            self.vault_generation += 1
        elif change.kind == "done":
            self.refresh_status()  # the embedding coverage moved
        elif change.kind == "failed":
            self.notify(f"live vault: {change.detail}", severity="warning")

    @work(thread=True, exclusive=True, exit_on_error=False, group="model")
    def preload_model(self) -> None:
        self.service.preload_models()

    def action_retry_models(self) -> None:
        """A model that failed to load is tried again now, not after models.retry_after_s (e.g. once
        it was rebuilt with `mindtui models build`)."""
        self.retry_models()

    @work(thread=True, exclusive=True, exit_on_error=False, group="model")
    def retry_models(self) -> None:
        self.service.retry_models()
        self.service.preload_models()

    @work(thread=True, exclusive=True, exit_on_error=False, group="status")
    def refresh_status(self) -> None:
        self.post_message(StatusRead(StatusInfo.read(self.service)))

    @on(StatusRead)
    def _status_read(self, message: StatusRead) -> None:
        self.status_info = message.info
        self.status_text = status_line(message.info, self.size.width)
        self.model_state = message.info.model_state
        self._saw_imports(message.info.index_changes)

    def _saw_imports(self, runs: list[int]) -> None:
        """Another process imported changes: which notes is not known here, so Search runs its
        query again and Note reloads its note ("." covers every path)."""
        if self._index_seen is not None and any(run > self._index_seen and run not in self._own_imports
                                                for run in runs):
            self.vault_paths = frozenset({"."})
            self.vault_generation += 1
        self._index_seen = max(runs, default=self._index_seen or 0)
        self._own_imports = {run for run in self._own_imports if run > self._index_seen}

    # -- actions -------------------------------------------------------------------------
    def action_mode(self, mode: str) -> None:
        if mode != self.current_mode:
            self.switch_mode(mode)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen, self))

    async def action_quit(self) -> None:
        self.exit(0)

    def open_note(self, name: str) -> None:
        """Show a note (path, title, alias or id) in the Note mode."""
        self.pending_note = name
        if self.current_mode == "note":
            self.screen.post_message(NoteScreen.Open(name))
        else:
            self.switch_mode("note")

    def open_item(self, item_id: int) -> None:
        """Show a knowledge item in the Knowledge mode."""
        self.pending_item = item_id
        if self.current_mode == "knowledge":
            self.screen.load()
        else:
            self.switch_mode("knowledge")

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Every action of every mode, by name: run in its mode (switched to first)."""
        yield from super().get_system_commands(screen)
        for mode, key, label in MODE_KEYS:
            yield SystemCommand(f"Mode: {label}", f"switch to the {label} mode ({key})",
                                lambda mode=mode: self.action_mode(mode))
        yield SystemCommand("Help: key bindings", "every key of this screen and the app (? or F1)", self.action_help)
        yield SystemCommand("Models: load again", "a model that failed to load is tried again now",
                            self.action_retry_models)
        for mode, screen_class in self.MODES.items():
            for name, description, action in screen_class.PALETTE:
                yield SystemCommand(name, description, partial(self.run_in_mode, mode, action))
        # The service stack is not imported yet in the first moments: its curation actions later then.
        service = service_api() if self._service_ready.is_set() else None
        for kind, actions in (service.curation_kind_actions() if service else {}).items():
            for action in actions:
                yield SystemCommand(f"Card: {action['name']} ({kind.replace('_', ' ')})",
                                    f"{action['description']} ({action['key']})",
                                    partial(self.run_in_mode, "curation", f"card('{kind}', '{action['name']}')"))

    async def run_in_mode(self, mode: str, action: str) -> None:
        if mode != self.current_mode:
            await self.switch_mode(mode)
        await self.screen.run_action(action)


def make_app(settings: Settings, *, service: "Service | None" = None, load_model: bool = True,
             poll_status: bool = True, debounce_s: float = DEBOUNCE_S, watch_vault: bool = True) -> MindtuiApp:
    """The app for `mindtui`, Pilot tests and snapshot tests alike. Tests pass their own service
    (a fixed database), load_model=False (no model thread), poll_status=False (no timer) and
    debounce_s=0 (the hybrid search starts on the next tick, so waiting for workers suffices) and
    watch_vault=False (no watcher thread and job children) unless they test the live vault."""
    return MindtuiApp(settings, service=service, load_model=load_model, poll_status=poll_status,
                      debounce_s=debounce_s, watch_vault=watch_vault)
