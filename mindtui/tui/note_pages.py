"""A long note, rendered page by page without freezing the screen.

Textual's Markdown widget mounts a widget per block: a 279 KB note (one list of 1,800 items)
blocked every key for 2-3 s, a 5 MB note for 34-45 s, and the layout of that many widgets
stays slow afterwards. This view draws rendered lines instead (a line-API scroll view: only
the visible rows are drawn, whatever the length) and renders the note's markdown with Rich a
page at a time: the first screenful at once, the rest in slices of RENDER_SLICE_S from a timer,
so keys are handled between slices. The slices count each page's lines (the scroll range); only
the CACHED_PAGES pages last looked at keep theirs, a page scrolled back to renders again. Wikilinks stay followable with the mouse (click) and by
keyboard (the Note mode's `l`).
"""

from __future__ import annotations

import gc
import time
from bisect import bisect_right
from collections import OrderedDict
from contextlib import contextmanager

from rich.markdown import Markdown as RichMarkdown
from rich.segment import Segment
from rich.style import Style
from rich.table import Table
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from mindtui.tui.literal import literal_text, visible
from mindtui.tui.note_markdown import WIKILINK_SCHEME, NotePages, href_target, readable

PAGE_CHARS = 2_000  # one page renders in ~3-15 ms (a 2-core machine, idle to loaded)
CACHED_PAGES = 16  # the rendered pages kept (a few screens around where the user looks)
RENDER_SLICE_S = 0.012  # at most this long on the event loop per slice (then keys and paints get their turn)
SLICE_GAP_S = 0.005
RESIZE_EVERY_S = 0.25


@contextmanager
def collections_deferred():
    """No garbage collection while a slice renders: Rich's temporaries live through the
    collections a render triggers and were promoted to the oldest generation, whose growth then
    ran a full collection of the process every ~0.5 s (50-120 ms each, keys waiting). Freed by
    their reference counts instead, they never reach it; what the slice keeps is collected young."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def properties_table(rows: list[tuple[str, str]]) -> Table:
    """A note's frontmatter as a table of two columns, one line per property (values wrap):
    compact, so the text still starts on the first screen of an 80x24 terminal."""
    table = Table("property", "value", show_header=False, expand=False, box=None, padding=(0, 1, 0, 0))
    for key, value in rows:
        table.add_row(literal_text(key, "bold"), literal_text(value, lines=True))
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
        self._pages: NotePages | None = None
        self._properties: list[tuple[str, str]] = []
        self._next = 0  # the first page not rendered yet
        self._head: list[Strip] = []  # the frontmatter table's lines (kept: a few)
        self._starts: list[int] = []  # per rendered page: its first line
        self._total = 0  # lines rendered: the head and every rendered page
        self._cache: OrderedDict[int, list[Strip]] = OrderedDict()  # page -> its lines, least recently used first
        self._width = 0
        self._sized_at = 0.0  # when the scroll range last grew
        self._generation = 0  # bumped by show(): a slice scheduled for an older note does nothing
        self._unsized_top: int | None = None  # shown before its first layout: where on_resize starts

    # -- what is shown -----------------------------------------------------------------
    def show(self, pages: NotePages, properties: list[tuple[str, str]] | None = None, *,
             keep_place: bool = False) -> None:
        """Show a note's pages (note_markdown.NotePages of its text after the frontmatter, the first
        few cut in a worker, the rest as they render) with its frontmatter as a table: the first
        screenful now, the rest in slices, each page made readable (note_markdown.readable) as it
        renders. keep_place: stay at the same line (a reload)."""
        top = self.scroll_offset.y if keep_place else 0
        self._pages = pages
        self._properties = list(properties or [])
        self._restart()
        generation = self._generation

        def first_screen() -> None:
            # After the layout: a view just shown has its width only then (rendered at a guessed
            # width, the first screen was rendered twice: again on the resize). Under load the
            # refresh after show() can come before the layout that sizes the view: wait for it.
            if generation != self._generation:
                return
            if not (self.scrollable_content_region.width or self.size.width):
                self._unsized_top = top  # a screen not current yet is not laid out: on_resize renders it
                return
            if self._content_width() != self._width:
                self._restart()
            self._render_slice(self._generation, until_line=top + max(self.size.height, 24) * 2)
            self.scroll_to(y=top, animate=False, immediate=True)

        self.call_after_refresh(first_screen)

    def clear(self) -> None:
        """Show nothing (and stop rendering what was shown)."""
        self._pages, self._properties = None, []
        self._restart()
        self.virtual_size = Size(self._width, 0)
        self.refresh()

    @property
    def complete(self) -> bool:
        return self._pages is not None and self._pages.page(self._next) is None

    @property
    def progress(self) -> tuple[int, int]:
        """(pages rendered, pages cut so far: all of them once complete)"""
        return self._next, len(self._pages.cut) if self._pages is not None else 0

    @property
    def line_count(self) -> int:
        return self._total

    def text_lines(self, start: int = 0, end: int | None = None) -> list[str]:
        """The rendered lines as plain text (what a test reads)."""
        end = self._total if end is None else min(end, self._total)
        return [self._line(index).text for index in range(start, end)]

    def _restart(self) -> None:
        self._generation += 1
        self._unsized_top = None
        self._next = 0
        self._cache.clear()
        self._starts = []
        self._width = self._content_width()
        self._head = []
        if self._properties:
            self._head = self._rendered(properties_table(self._properties)) + [Strip.blank(self._width)]
        self._total = len(self._head)

    def _content_width(self) -> int:
        return max(20, self.scrollable_content_region.width or self.size.width or 80)

    # -- rendering ---------------------------------------------------------------------
    def _rendered(self, renderable) -> list[Strip]:
        console = self.app.console
        options = console.options.update_width(self._width)
        return [Strip(self._linked(line), Segment.get_line_length(line))
                for line in console.render_lines(renderable, options, style=self.rich_style, pad=False)]

    def _page_lines(self, page: int, *, looked_at: bool = True) -> list[Strip]:
        """A page's lines: from the cache, else rendered again (the same lines: the same width).
        Only the pages last looked at are kept: the lines of a 5 MB note held at once made every
        full garbage collection of the process take 0.1-1.2 s (with keys waiting behind it)."""
        lines = self._cache.get(page)
        if lines is None:
            markdown = visible(readable(self._pages.page(page), frontmatter=False), lines=True)
            lines = self._rendered(RichMarkdown(markdown, hyperlinks=True))
            if looked_at:  # a page rendered ahead only to be counted is not kept
                self._cache[page] = lines
                while len(self._cache) > CACHED_PAGES:
                    self._cache.popitem(last=False)
        elif looked_at:
            self._cache.move_to_end(page)
        return lines

    def _line(self, index: int) -> Strip:
        if index < len(self._head):
            return self._head[index]
        page = bisect_right(self._starts, index) - 1
        return self._page_lines(page)[index - self._starts[page]]

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
        with collections_deferred():
            while self._pages.page(self._next) is not None:
                self._starts.append(self._total)
                self._total += len(self._page_lines(self._next, looked_at=until_line is not None))
                self._next += 1
                if until_line is not None:
                    if self._total >= until_line:
                        break
                elif time.perf_counter() - started >= RENDER_SLICE_S:
                    break
        done = self._pages.page(self._next) is None
        near_end = self.scroll_offset.y + self.size.height * 4 >= self.virtual_size.height
        # A new scroll range lays the whole screen out again (~5-20 ms): a few times a second,
        # and whenever the user is about to reach the end of what is counted.
        if until_line is not None or done or near_end or time.perf_counter() - self._sized_at >= RESIZE_EVERY_S:
            self._sized_at = time.perf_counter()
            self.virtual_size = Size(self._width, self._total)
            self.refresh()
        if not done:
            self.set_timer(SLICE_GAP_S, lambda: self._render_slice(generation))
        else:
            self.post_message(self.Rendered())

    def on_resize(self) -> None:
        unsized, self._unsized_top = self._unsized_top, None
        if self._pages is not None and (self._content_width() != self._width or unsized is not None):
            top = self.scroll_offset.y if unsized is None else unsized
            self._restart()  # rendered lines are wrapped to one width: render again at the new one
            self._render_slice(self._generation, until_line=top + max(self.size.height, 24) * 2)
            if unsized is not None:
                self.scroll_to(y=top, animate=False, immediate=True)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        if index >= self._total:
            return Strip.blank(width, self.rich_style)
        return self._line(index).crop_extend(scroll_x, scroll_x + width, self.rich_style)

    @property
    def allow_vertical_scroll(self) -> bool:
        """Scrollable once the lines rendered so far outgrow the view. Textual's own test waits for
        the next layout to show the scrollbar: under load the first Downs after the first screen
        came before it and were ignored (three Downs and an Up ended on line 1)."""
        return not self._check_disabled() and self.max_scroll_y > 0

    # Keys scroll at once, not animated: the scroll range grows while the note renders, and a
    # grow in the middle of an animation dropped the Downs queued in it (3 Downs, 1 Up -> line 1).
    def action_scroll_down(self) -> None:
        self.scroll_to(y=self.scroll_target_y + 1, animate=False, immediate=True)

    def action_scroll_up(self) -> None:
        self.scroll_to(y=self.scroll_target_y - 1, animate=False, immediate=True)

    def action_page_down(self) -> None:
        self.scroll_to(y=self.scroll_target_y + self.scrollable_content_region.height, animate=False, immediate=True)

    def action_page_up(self) -> None:
        self.scroll_to(y=self.scroll_target_y - self.scrollable_content_region.height, animate=False, immediate=True)

    def action_follow(self, href: str) -> None:
        if href_target(href):
            self.post_message(self.LinkClicked(self, href))
