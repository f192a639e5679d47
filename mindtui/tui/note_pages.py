"""A long note, rendered page by page without freezing the screen.

Textual's Markdown widget mounts a widget per block: a 279 KB note (one list of 1,800 items)
blocked every key for 2-3 s, a 5 MB note for 34-45 s, and the layout of that many widgets
stays slow afterwards. This view keeps rendered lines instead (a line-API scroll view: only
the visible rows are drawn, whatever the length) and renders the note's markdown with Rich a
page at a time: the first screenful at once, the rest in slices of RENDER_SLICE_S from a timer,
so keys are handled between slices. Wikilinks stay followable with the mouse (click) and by
keyboard (the Note mode's `l`).
"""

from __future__ import annotations

import time

from rich.markdown import Markdown as RichMarkdown
from rich.segment import Segment
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from mindtui.tui.note_markdown import WIKILINK_SCHEME, href_target, readable

PAGE_CHARS = 4_000  # one page renders in ~5-30 ms (a 2-core machine, idle to loaded)
RENDER_SLICE_S = 0.03  # at most this long on the event loop per slice (then keys and paints get their turn)
SLICE_GAP_S = 0.005


def properties_table(rows: list[tuple[str, str]]) -> Table:
    """A note's frontmatter as a table of two columns, one line per property (values wrap):
    compact, so the text still starts on the first screen of an 80x24 terminal."""
    table = Table("property", "value", show_header=False, expand=False, box=None, padding=(0, 1, 0, 0))
    for key, value in rows:
        table.add_row(Text(key, style="bold"), value)
    return table


class PagedMarkdown(ScrollView, can_focus=True):
    DEFAULT_CSS = """
    PagedMarkdown { height: 1fr; }
    """

    class LinkClicked(Message):
        def __init__(self, view: "PagedMarkdown", href: str) -> None:
            super().__init__()
            self.view, self.href = view, href

        @property
        def control(self) -> "PagedMarkdown":
            return self.view

    class Rendered(Message):
        """Every page of the note is rendered."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._pages: list[str] = []
        self._properties: list[tuple[str, str]] = []
        self._next = 0  # the first page not rendered yet
        self._lines: list[Strip] = []
        self._width = 0
        self._generation = 0  # bumped by show(): a slice scheduled for an older note does nothing

    # -- what is shown -----------------------------------------------------------------
    def show(self, pages: list[str], properties: list[tuple[str, str]] | None = None, *,
             keep_place: bool = False) -> None:
        """Show a note's pages (note_markdown.split_pages of its text after the frontmatter, cut in a
        worker) with its frontmatter as a table: the first screenful now, the rest in slices, each
        page made readable (note_markdown.readable) as it renders. keep_place: stay at the same
        line (a reload)."""
        top = self.scroll_offset.y if keep_place else 0
        self._pages = list(pages)
        self._properties = list(properties or [])
        self._restart()
        self._render_slice(self._generation, until_line=top + max(self.size.height, 24) * 2)
        self.scroll_to(y=top, animate=False, immediate=True) if keep_place else self.scroll_home(animate=False)

    def clear(self) -> None:
        """Show nothing (and stop rendering what was shown)."""
        self._pages, self._properties = [], []
        self._restart()
        self.virtual_size = Size(self._width, 0)
        self.refresh()

    @property
    def complete(self) -> bool:
        return self._next >= len(self._pages) and bool(self._pages)

    @property
    def progress(self) -> tuple[int, int]:
        """(pages rendered, pages)"""
        return self._next, len(self._pages)

    @property
    def line_count(self) -> int:
        return len(self._lines)

    def text_lines(self, start: int = 0, end: int | None = None) -> list[str]:
        """The rendered lines as plain text (what a test reads)."""
        return [strip.text for strip in self._lines[start:end]]

    def _restart(self) -> None:
        self._generation += 1
        self._next = 0
        self._lines = []
        self._width = self._content_width()
        if self._properties:
            self._append(properties_table(self._properties))
            self._lines.append(Strip.blank(self._width))

    def _content_width(self) -> int:
        return max(20, self.scrollable_content_region.width or self.size.width or 80)

    # -- rendering ---------------------------------------------------------------------
    def _append(self, renderable) -> None:
        console = self.app.console
        options = console.options.update_width(self._width)
        style = self.rich_style
        for line in console.render_lines(renderable, options, style=style, pad=False):
            self._lines.append(Strip(self._linked(line), Segment.get_line_length(line)))

    def _linked(self, line: list[Segment]) -> list[Segment]:
        """A wikilink's href becomes a click action (a terminal would try to open note:... itself)."""
        out = []
        for segment in line:
            style = segment.style
            link = style.link if style is not None else None
            if link and link.startswith(WIKILINK_SCHEME):
                style = style + Style(link=None, underline=True) + Style.from_meta({"@click": f"follow({link!r})"})
                segment = Segment(segment.text, style)
            out.append(segment)
        return out

    def _render_slice(self, generation: int, until_line: int | None = None) -> None:
        if generation != self._generation:
            return
        started = time.perf_counter()
        while self._next < len(self._pages):
            self._append(RichMarkdown(readable(self._pages[self._next], frontmatter=False), hyperlinks=True))
            self._next += 1
            if until_line is not None:
                if len(self._lines) >= until_line:
                    break
            elif time.perf_counter() - started >= RENDER_SLICE_S:
                break
        self.virtual_size = Size(self._width, len(self._lines))
        self.refresh()
        if self._next < len(self._pages):
            self.set_timer(SLICE_GAP_S, lambda: self._render_slice(generation))
        else:
            self.post_message(self.Rendered())

    def on_resize(self) -> None:
        if self._pages and self._content_width() != self._width:
            top = self.scroll_offset.y
            self._restart()  # rendered lines are wrapped to one width: render again at the new one
            self._render_slice(self._generation, until_line=top + self.size.height * 2)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        if index >= len(self._lines):
            return Strip.blank(width, self.rich_style)
        return self._lines[index].crop_extend(scroll_x, scroll_x + width, self.rich_style)

    def action_follow(self, href: str) -> None:
        if href_target(href):
            self.post_message(self.LinkClicked(self, href))
