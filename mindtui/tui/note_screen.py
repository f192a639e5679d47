"""Note mode: a note rendered as markdown, its chunks one by one, and beside it what belongs
with it, grouped by signal (links, backlinks, typed relations, type defaults, edited together,
found together, suggestions) with provenance, confidence, weight and evidence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import os
import shlex
import subprocess
from pathlib import Path

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Markdown, Static, Tree

from mindtui.tui.key_footer import KeyFooter
from mindtui.tui.lazy import service_api
from mindtui.tui.literal import literal, literal_text, visible
from mindtui.tui.note_markdown import NotePages, frontmatter_rows, href_target, readable, strip_frontmatter
from mindtui.tui.note_markdown import wikilinks
from mindtui.tui.note_pages import PAGE_CHARS, PagedMarkdown, properties_table
from mindtui.tui.picker import Choice, PickerScreen
from mindtui.tui.status import StatusBar, cut
from mindtui.tui.worker_errors import ReportsWorkerErrors

if TYPE_CHECKING:
    from mindtui.service import NeighboursView, NoteView

GROUP_LABELS = {"links_out": "links", "backlinks": "backlinks", "relations": "relations",
                "type_defaults": "type defaults", "change": "edited together", "search": "found together",
                "suggestions": "suggestions"}
# Longer text is shown page by page (note_pages): Textual's Markdown widget takes ~1 ms of the
# event loop per block, all at once.
PAGED_FROM = 20_000
FIRST_PAGES = 8  # cut in the loading worker: more than a first screen (the view cuts the rest as it renders)
NEIGHBOURS_SHOWN = 200  # per group: a hub note's 1,800 links as tree nodes took the event loop for a while


class Prepared:
    """A note's text made ready for the screen in the loading worker: its CommonMark, or its
    first pages when it is long (the rest are cut, and each page made readable, as they render:
    cutting all of 5 MB took 30-100 ms before the first screen), and its frontmatter."""

    def __init__(self, text: str) -> None:
        paged = len(text) > PAGED_FROM
        self.markdown = "" if paged else visible(readable(text), lines=True)  # a long one: page by page
        self.pages = NotePages(strip_frontmatter(text), PAGE_CHARS, FIRST_PAGES) if paged else None
        self.properties = frontmatter_rows(text)


TREE_GUIDE = 4  # the columns a tree leaf's guide lines take ("├── ")


def entry_label(entry, room: int) -> str:
    """The title cut to the side panel's room with an ellipsis, and the confidence when it is not
    certain (kept whole: the title gives way)."""
    if entry.confidence >= 1.0:
        return cut(entry.title, room)
    confidence = f" ({entry.confidence:.2f})"
    return cut(entry.title, room - len(confidence)) + confidence


def one_per_note(entries: list) -> list[tuple[object, list[str]]]:
    """A group's entries, one per note (the first, strongest), with every kind it is linked by:
    a note related in three ways is one row, not three of the same title."""
    kinds: dict[str, list[str]] = {}
    first: dict[str, object] = {}
    for entry in entries:
        key = entry.note_id or entry.path
        first.setdefault(key, entry)
        kinds.setdefault(key, [])
        if entry.kind not in kinds[key]:
            kinds[key].append(entry.kind)
    return [(entry, kinds[key]) for key, entry in first.items()]


def entry_detail(group: str, entry, kinds: list[str] | None = None) -> str:
    extra = " ".join(f"{k} {v}" for k, v in entry.extra.items() if v not in (None, "", False))
    lines = [visible(entry.title), visible(entry.path),
             f"{GROUP_LABELS.get(group, group)} · {', '.join(kinds or [entry.kind])}",
             f"{entry.provenance} · confidence {entry.confidence:.2f} · weight {entry.weight:g}"]
    if extra:
        lines.append(extra)
    if entry.evidence:
        lines.append(f"“{entry.evidence.strip()}”")
    return "\n".join(lines)


class NoteScreen(ReportsWorkerErrors, Screen):
    CSS_PATH = "note_screen.tcss"
    PALETTE = [("Note: follow a link", "pick one of this note's wikilinks (l)", "links"),
               ("Note: edit in $EDITOR", "open the file, re-import it afterwards (e)", "edit"),
               ("Note: copy [[link]]", "copy a wikilink to this note (y, OSC 52)", "copy_link"),
               ("Note: next chunk", "show the next chunk (n)", "chunk(1)"),
               ("Note: previous chunk", "show the previous chunk (p)", "chunk(-1)"),
               ("Note: whole note", "show the whole note again (a)", "whole"),
               ("Note: back", "the note before in the history ([)", "back"),
               ("Note: forward", "the next note in the history (])", "forward")]
    BINDINGS = [
        Binding("n", "chunk(1)", "Next chunk"),
        Binding("p", "chunk(-1)", "Prev chunk"),
        Binding("a", "whole", "Whole note", show=False),
        Binding("l", "links", "Links"),
        Binding("e", "edit", "Edit"),
        Binding("y", "copy_link", "Copy [[ ]]"),
        Binding("left_square_bracket,alt+left", "back", "Back"),
        Binding("right_square_bracket,alt+right", "forward", "Forward", show=False),
        Binding("escape", "leave", "Search", show=False),
    ]

    class Open(Message):
        def __init__(self, name: str, remember: bool = True) -> None:
            super().__init__()
            self.name, self.remember = name, remember

    class Loaded(Message):
        """A note's text, ready to show (its chunks and what is around it follow in Surroundings)."""

        def __init__(self, note: NoteView, remember: bool, prepared: Prepared, keep_place: bool = False) -> None:
            super().__init__()
            self.note, self.remember, self.prepared, self.keep_place = note, remember, prepared, keep_place

    class Surroundings(Message):
        def __init__(self, note_id: str, chunks: list, neighbours: NeighboursView, items: list) -> None:
            super().__init__()
            self.note_id, self.chunks, self.neighbours, self.items = note_id, chunks, neighbours, items

    class Gone(Message):
        """The open note was deleted on disk (the live vault imported that)."""

    class EditFile(Message):
        def __init__(self, path: Path) -> None:
            super().__init__()
            self.path = path

    def __init__(self) -> None:
        super().__init__()
        self.note: NoteView | None = None
        self.neighbours: NeighboursView | None = None
        self.items: list = []  # knowledge items about this note or taken from it
        self.chunk_index: int | None = None  # None: the whole note
        self.prepared: Prepared | None = None
        self.back_stack: list[str] = []
        self.forward_stack: list[str] = []

    def compose(self) -> ComposeResult:
        yield Static("no note open: find one in Search (F2)", id="note-header")
        with Horizontal(id="note-body"):
            with VerticalScroll(id="note-scroll"):
                yield Static("", id="note-properties")
                yield Markdown("", id="note-text", open_links=False)
            yield PagedMarkdown(id="note-pages")
            with Vertical(id="note-side"):
                yield Tree("neighbours", id="neighbours")
                yield Static("", id="neighbour-detail")
        yield StatusBar()
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#neighbours", Tree).show_root = False
        self.query_one("#note-pages").display = False
        self.watch(self.app, "vault_generation", self._vault_changed, init=False)
        # The pending note is opened by on_screen_resume, which the first switch to the mode sends
        # too (opened here as well, it loaded and rendered twice: keys in between were undone).

    def on_screen_resume(self) -> None:
        pending = self.app.pending_note
        if pending and (self.note is None or pending != self.note.note_id):
            self.post_message(self.Open(pending))

    # -- loading -------------------------------------------------------------------------
    @on(Open)
    def _open(self, message: Open) -> None:
        self.load(message.name, message.remember)

    @work(thread=True, exclusive=True, exit_on_error=False, group="note-load")
    def load(self, name: str, remember: bool = True, keep_place: bool = False) -> None:
        # The text first: a 5 MB note's 10,000 chunks and its neighbours took as long again to
        # load, and its first screen waited for them.
        service = self.app.service
        try:
            note = service.note(name, with_chunks=False)
        except service_api().NoteNotFound:
            if not keep_place:
                raise
            self.post_unless_cancelled(self.Gone())  # a reload: the note went away on disk
            return
        self.post_unless_cancelled(self.Loaded(note, remember, Prepared(note.text), keep_place))
        try:
            chunks = service.note_chunks(note.note_id)
        except service_api().NoteNotFound:
            return  # deleted in between: the next import's reload says so
        self.post_unless_cancelled(self.Surroundings(note.note_id, chunks, service.neighbours(note.note_id),
                                                     service.knowledge_for_note(note.note_id)))

    @on(Loaded)
    def _loaded(self, message: Loaded) -> None:
        if message.remember and self.note is not None and self.note.note_id != message.note.note_id:
            self.back_stack.append(self.note.note_id)
            self.forward_stack.clear()
            self.record_use(message.note.note_id, "follow", via=self.note.note_id)
        self.note, self.neighbours, self.items = message.note, None, []
        self.prepared = message.prepared
        self.app.pending_note = message.note.note_id
        if not message.keep_place:
            self.chunk_index = None
        if self.chunk_index is None:  # a chunk shown is shown again once the chunks are here
            self._render_text(keep_place=message.keep_place)
        self._render_neighbours()

    @on(Surroundings)
    def _surroundings(self, message: Surroundings) -> None:
        if self.note is None or self.note.note_id != message.note_id:
            return
        self.note.chunks, self.neighbours, self.items = message.chunks, message.neighbours, message.items
        if self.chunk_index is not None:
            if self.chunk_index >= len(message.chunks):
                self.chunk_index = None
            self._render_text(keep_place=True)
        self._render_neighbours()

    @on(Gone)
    def _gone(self) -> None:
        if self.note is not None:
            self.notify(f"{self.note.path} was deleted on disk", severity="warning")
            self.query_one("#note-header", Static).update(literal(f"{self.note.title}  ·  deleted on disk"))

    def _vault_changed(self, generation: int) -> None:
        """The live vault imported changes: reload the open note in place when it is one of them
        (a rename reports the old path too; a folder's move or the first run may cover it)."""
        note, paths = self.note, self.app.vault_paths
        if note is None:
            return
        if any(path == note.path or path == "." or note.path.startswith(path.rstrip("/") + "/") for path in paths):
            self.load(note.note_id, remember=False, keep_place=True)

    def _render_text(self, keep_place: bool = False) -> None:
        note = self.note
        if note is None:
            return
        header = visible(f"{note.title}  ·  {note.type}  ·  {note.path}")
        if note.tags:
            header += visible("  ·  #" + " #".join(note.tags))
        if self.chunk_index is not None and note.chunks:
            chunk = note.chunks[self.chunk_index]
            header += (f"\nchunk {self.chunk_index + 1}/{len(note.chunks)}"
                       f"{'  ·  ' + visible(chunk.heading_path) if chunk.heading_path else ''}"
                       f"  ·  lines {chunk.line_start}-{chunk.line_end}")
            prepared = Prepared(chunk.text)  # a chunk is short (<= 512 tokens): at once
        else:
            prepared = self.prepared or Prepared(note.text)
            if note.text_source != "file":
                header += f"\n({'changed on disk since the import' if note.text_source == 'file-changed' else 'from the index: the file is not readable'})"
        self.query_one("#note-header", Static).update(literal(header, lines=True))
        scroll, pages = self.query_one("#note-scroll"), self.query_one("#note-pages", PagedMarkdown)
        scroll.display, pages.display = prepared.pages is None, prepared.pages is not None
        if prepared.pages is not None:
            pages.show(prepared.pages, prepared.properties if self.chunk_index is None else None,
                       keep_place=keep_place)
            return
        pages.clear()
        top = scroll.scroll_y if keep_place else 0
        properties = self.query_one("#note-properties", Static)
        shown = bool(prepared.properties) and self.chunk_index is None
        properties.display = shown
        properties.update(properties_table(prepared.properties) if shown else "")
        self.query_one("#note-text", Markdown).update(prepared.markdown)
        scroll.call_after_refresh(lambda: scroll.scroll_to(y=top, animate=False))

    def _render_neighbours(self) -> None:
        tree = self.query_one("#neighbours", Tree)
        tree.clear()
        if self.neighbours is None:  # still loading
            self.query_one("#neighbour-detail", Static).update("")
            return
        room = self._side_width() - TREE_GUIDE - 2  # the scrollbar and a column to spare
        groups = self.neighbours.groups if self.neighbours else {}
        if self.items:
            branch = tree.root.add(f"knowledge ({len(self.items)})", expand=True, data=None)
            for item in self.items:
                mark = {"confirmed": "✓", "draft": "·", "superseded": "×"}.get(item.status, "?")
                branch.add_leaf(literal_text(cut(f"{mark} {item.type}: {item.title}", room)), data=("knowledge", item))
        for group, entries in groups.items():
            if not entries:
                continue
            rows = one_per_note(entries)
            branch = tree.root.add(f"{GROUP_LABELS.get(group, group)} ({len(rows)})", expand=True, data=None)
            for entry, kinds in rows[:NEIGHBOURS_SHOWN]:
                branch.add_leaf(literal_text(entry_label(entry, room)), data=(group, entry, kinds))
            if len(rows) > NEIGHBOURS_SHOWN:
                branch.add_leaf(f"… {len(rows) - NEIGHBOURS_SHOWN:,} more"
                                + (" (l lists every link)" if group == "links_out" else ""))
        if not any(groups.values()) and not self.items:
            tree.root.add_leaf("nothing belongs with this note yet")
        self.query_one("#neighbour-detail", Static).update("")

    def _side_width(self) -> int:
        """The side panel's width from the screen's, as its CSS gives it (its own size lags a
        layout behind): a third of the screen, 28 to 60 columns, less its border."""
        return max(28, min(60, self.size.width // 3)) - 1

    def on_resize(self) -> None:
        if self.note is not None:
            self._render_neighbours()

    @on(Tree.NodeHighlighted, "#neighbours")
    def _neighbour_highlighted(self, event: Tree.NodeHighlighted) -> None:
        data = event.node.data
        if data and data[0] == "knowledge":
            item = data[1]
            text = (f"{item.type} · {item.status}\n{visible(item.title)}"
                    + (f"\n“{item.quote}”" if item.quote else ""))
        else:
            text = entry_detail(*data) if data else ""
        self.query_one("#neighbour-detail", Static).update(literal(text, lines=True))

    @on(Tree.NodeSelected, "#neighbours")
    def _neighbour_selected(self, event: Tree.NodeSelected) -> None:
        data = event.node.data
        if data and data[0] == "knowledge":
            self.app.open_item(data[1].item_id)
        elif data and data[1].note_id:
            self.post_message(self.Open(data[1].note_id))
        elif data:
            self.notify(f"{data[1].path} is not in the index", severity="warning")

    @on(Markdown.LinkClicked, "#note-text")
    @on(PagedMarkdown.LinkClicked, "#note-pages")
    def _link_clicked(self, event: Markdown.LinkClicked) -> None:
        target = href_target(event.href)
        if target:
            self.post_message(self.Open(target))

    # -- keys ----------------------------------------------------------------------------
    def action_chunk(self, step: int) -> None:
        if self.note is None or not self.note.chunks:
            return
        count = len(self.note.chunks)
        if self.chunk_index is None:
            self.chunk_index = 0 if step > 0 else count - 1
        else:
            self.chunk_index = max(0, min(count - 1, self.chunk_index + step))
        self._render_text()

    def action_whole(self) -> None:
        self.chunk_index = None
        self._render_text()

    def action_links(self) -> None:
        if self.note is None:
            return
        links = wikilinks(self.note.text)
        if not links:
            self.notify("this note has no wikilinks")
            return
        choices = [Choice(target, label if label == target else f"{label}  →  {target}") for target, label in links]

        def follow(target: str | None) -> None:
            if target:
                self.post_message(self.Open(target))

        self.app.push_screen(PickerScreen("follow a link", choices), follow)

    def action_copy_link(self) -> None:
        if self.note is not None:
            self.app.copy_to_clipboard(f"[[{self.note.title}]]")
            self.notify(f"copied [[{self.note.title}]]")
            self.record_use(self.note.note_id, "copy", via=self.note.note_id)

    def record_use(self, note_id: str, how: str, via: str) -> None:
        """Usage memory: the note opened from a search (via) had its link copied or a link followed
        out of it (note_id); both count for that search. Other notes are not the search's doing."""
        trail = self.app.search_trail
        if trail is not None and trail[1] == via:
            self._record_open(trail, note_id, how)

    @work(thread=True, exit_on_error=False, group="usage")
    def _record_open(self, trail: tuple[int, str, list[str]], note_id: str, how: str) -> None:
        search_id, _, results = trail
        for notice in self.app.service.record_open("", "hybrid", results, note_id, how, search_id=search_id).notices:
            self.app.call_from_thread(self.notify, notice, severity="warning")

    def action_back(self) -> None:
        if self.back_stack and self.note is not None:
            self.forward_stack.append(self.note.note_id)
            self.post_message(self.Open(self.back_stack.pop(), remember=False))

    def action_forward(self) -> None:
        if self.forward_stack and self.note is not None:
            self.back_stack.append(self.note.note_id)
            self.post_message(self.Open(self.forward_stack.pop(), remember=False))

    def action_leave(self) -> None:
        self.app.action_mode("search")

    # -- editing -------------------------------------------------------------------------
    def action_edit(self) -> None:
        if self.note is not None:
            self.locate_file(self.note.note_id)

    @work(thread=True, exclusive=True, exit_on_error=False, group="note-edit")
    def locate_file(self, note_id: str) -> None:
        self.post_message(self.EditFile(self.app.service.note_file(note_id)))

    @on(EditFile)
    def _edit_file(self, message: EditFile) -> None:
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        try:
            with self.app.suspend():
                subprocess.run([*shlex.split(editor), str(message.path)], check=False)
        except (OSError, ValueError) as exc:
            self.notify(f"cannot start the editor {editor!r}: {exc}", severity="error")
            return
        self.reimport(self.note.note_id if self.note else None)

    @work(thread=True, exclusive=True, exit_on_error=False, group="note-edit")
    def reimport(self, note_id: str | None) -> None:
        try:
            result = self.app.service.run_job("index", steps=["import"])
        except service_api().JobLockedError:
            self.app.call_from_thread(self.notify, "a job is running: it picks up your change", severity="warning")
            return
        if not result.ok:
            self.app.call_from_thread(self.notify, f"re-import: {result.steps[0].error}", severity="error")
        if note_id:
            self.post_message(self.Open(note_id, remember=False))
