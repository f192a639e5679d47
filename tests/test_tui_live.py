"""The TUI with the vault: a big note opens page by page while keys keep working, and the live
vault's watcher (real watchfiles, real job children) brings a change on disk into the open note
and into the search results. Every wait is on a condition (see tui_support.settle, wait_for)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from tui_support import no_model, pilot_app, settle

from mindtui.audience import Audience
from mindtui.config import load_settings
from mindtui.jobs.watch import VaultChange
from mindtui.models.holder import ModelHolder
from mindtui.service import Service
from mindtui.tui.app import VaultChanged, make_app
from mindtui.tui.note_pages import PagedMarkdown

WAIT_S = 90.0


async def wait_for(pilot, condition, what: str, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.02)


def big_note(items: int) -> str:
    lines = ["---", "type: hub", "tags: [plugins, big]", "aliases: [Everything]", "---", "", "# Big list", "",
             "All the plugins, one per line.", ""]
    lines += [f"- [[plugin-{n}|Plugin number {n}]]: does thing {n} and explains itself in a sentence long enough "
              f"to wrap on an eighty column screen, more or less." for n in range(items)]
    return "\n".join(lines) + "\n"


def service_for(vault, db_path, **values) -> Service:
    """An owner's service over the scratch vault, imported (no model)."""
    settings = load_settings().with_overrides(db=str(db_path), vault=str(vault.root)).with_values(values)
    service = Service(settings, audience=Audience.OWNER, models=ModelHolder(embedder_factory=no_model))
    assert service.run_job("index", steps=["import"], vault=vault.root).ok
    return service


@pytest.fixture
def big_vault(vault, db_path):
    text = big_note(9000)  # ~1.4 MB, one top-level list (as hub notes are)
    assert len(text) > 1_000_000
    vault.write("Big.md", text, dedent=False)
    vault.write("plugin-0.md", "# Plugin zero\n\nThe first plugin.\n")
    service = service_for(vault, db_path, **{"import": {"max_file_bytes": 10_000_000}})
    yield vault, service
    service.close()


async def open_big(pilot) -> PagedMarkdown:
    """Open the big note; its view once the first screen is rendered."""
    app = pilot.app
    app.open_note("Big")
    await wait_for(pilot, lambda: app.current_mode == "note" and app.screen.query("#note-pages"), "the Note mode")
    pages = app.screen.query_one("#note-pages", PagedMarkdown)
    await wait_for(pilot, lambda: pages.line_count > 20, "the first screen")
    return pages


async def test_a_big_note_shows_its_first_screen_and_keys_work_while_the_rest_renders(big_vault):
    vault, service = big_vault
    app = pilot_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        pages = await open_big(pilot)
        assert not pages.complete  # the rest is still rendering ...
        assert not pages._pages.all_cut  # ... and is not even cut into pages yet: the first screen did not wait for that
        await pilot.press("f2")  # ... and a key is handled meanwhile
        await wait_for(pilot, lambda: app.current_mode == "search", "the mode switch")
        assert not pages.complete, "the key waited for the whole note"
        await pilot.press("f3")
        await wait_for(pilot, lambda: app.current_mode == "note", "back in the Note mode")
        await pilot.press("pagedown")
        await wait_for(pilot, lambda: pages.scroll_offset.y > 0, "the scroll")
        shown = pages.text_lines(0, 40)
        text = "\n".join(shown)
    # markdown, not raw text: the frontmatter as a table, headings and links rendered, lines wrapped
    assert "type" in text and "hub" in text and "---" not in text
    assert "Big list" in text and "# Big list" not in text
    assert "Plugin number 0" in text and "[[" not in text and "plugin-0|" not in text
    assert all(len(line) <= 80 for line in shown)


async def test_keys_pressed_while_a_big_note_renders_are_handled_in_order(big_vault):
    """Keys that arrive together while the rest of the note renders: each one handled, in order,
    none waiting for the whole note (three Downs, then an Up: an Up handled first would be lost
    at the top, a Down dropped would leave the view higher)."""
    from textual import events

    vault, service = big_vault
    app = pilot_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        pages = await open_big(pilot)
        app.screen.set_focus(pages)
        await wait_for(pilot, lambda: app.focused is pages and pages.max_scroll_y > 10, "the focus")
        assert not pages.complete
        for key in ("down", "down", "down", "up"):  # as a terminal read hands them over: no waiting between
            app.post_message(events.Key(key, None))
        await wait_for(pilot, lambda: pages.scroll_target_y == 2 and pages.scroll_offset.y == 2, "the keys")
        assert not pages.complete, "the keys waited for the whole note"


def test_a_long_note_is_cut_into_pages_only_as_far_as_they_are_asked_for():
    from mindtui.tui.note_markdown import NotePages, split_pages

    text = big_note(3000)
    pages = NotePages(text, 2_000, first=3)
    assert len(pages.cut) == 3 and not pages.all_cut
    assert pages.page(5) is not None and len(pages.cut) == 6
    assert pages.page(10**6) is None and pages.all_cut
    assert pages.cut == split_pages(text, 2_000) and "".join(pages.cut) == text


async def test_a_big_note_keeps_only_the_pages_looked_at(vault, db_path):
    """Every page is counted, but only the last CACHED_PAGES looked at keep their rendered lines
    (all of a 5 MB note's lines made each full garbage collection take up to 1.2 s); a page
    scrolled back to renders again, the same."""
    from mindtui.tui.note_pages import CACHED_PAGES

    vault.write("Big.md", big_note(1500), dedent=False)
    service = service_for(vault, db_path)
    try:
        app = pilot_app(service)
        async with app.run_test(size=(80, 24)) as pilot:
            pages = await open_big(pilot)
            first = pages.text_lines(0, 30)
            await wait_for(pilot, lambda: pages.complete, "the whole note")
            assert pages.progress[1] > CACHED_PAGES * 2
            assert len(pages._cache) <= CACHED_PAGES
            app.screen.set_focus(pages)
            await pilot.press("end")
            await wait_for(pilot, lambda: pages.scroll_offset.y == pages.max_scroll_y > 0, "the end")
            last = "\n".join(pages.text_lines(pages.line_count - 30))
            assert "Plugin number 1499" in last and "[[" not in last
            pages._cache.clear()  # as if every page had been scrolled out of the cache
            assert pages.text_lines(0, 30) == first
            assert len(pages._cache) <= CACHED_PAGES
    finally:
        service.close()


async def test_a_big_notes_links_are_followable(big_vault):
    vault, service = big_vault
    app = pilot_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        pages = await open_big(pilot)
        row = next(i for i, line in enumerate(pages.text_lines(0, 20)) if "Plugin number 0" in line)
        column = pages.text_lines(row, row + 1)[0].index("Plugin number 0")
        # Under load a click can land while the later pages still lay out the widget (seen once in a
        # full run): click again until the link is followed, each time waiting on what the click changes.
        for _attempt in range(5):
            await pilot.click("#note-pages", offset=(column + 2, row))
            try:
                await wait_for(pilot, lambda: app.screen.note.path == "plugin-0.md", "the linked note", timeout=15)
                break
            except AssertionError:
                continue
        assert app.screen.note.path == "plugin-0.md"


async def search_walrus_then_write_it(pilot, vault):
    """Search for a word no note has (the answer: nothing), then write it into Otter.md."""
    await pilot.press(*"walrus")
    screen = pilot.app.screen
    await wait_for(pilot, lambda: screen.shown is not None and screen.shown[0] == screen.generation, "the first answer")
    assert screen.results == []
    vault.write("Otter.md", "# Otter\n\nOtters hold hands while they sleep, unlike a walrus.\n")
    return screen


async def test_the_open_note_and_the_search_follow_a_change_on_disk(vault, db_path):
    vault.write("Otter.md", "# Otter\n\nOtters hold hands while they sleep.\n")
    service = service_for(vault, db_path, watch={"embed": False, "quiet_s": 0.3})
    app = make_app(service.settings, service=service, load_model=False, poll_status=False, debounce_s=0, watch_vault=True)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_for(pilot, lambda: app.watcher is not None and app.watcher.wait_ready(0), "the watcher")
            screen = await search_walrus_then_write_it(pilot, vault)
            await wait_for(pilot, lambda: [r.path for r in screen.results] == ["Otter.md"], "the search to follow")

            app.open_note("Otter.md")
            await wait_for(pilot, lambda: app.current_mode == "note" and app.screen.note is not None, "the note")
            note_screen = app.screen
            vault.write("Otter.md", "# Otter\n\nOtters hold hands while they sleep; seals do not.\n")
            await wait_for(pilot, lambda: "seals do not" in note_screen.note.text, "the note to reload in place")
            assert app.current_mode == "note" and note_screen.back_stack == []  # in place, not a new visit
    finally:
        service.close()


def index_in_another_process(vault, db_path) -> None:
    """`mindtui index` as a user runs it in another terminal (or a `mindtui watch` service would)."""
    done = subprocess.run([sys.executable, "-m", "mindtui", "index", str(vault.root), "--db", str(db_path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


async def test_an_import_by_another_process_shows_in_the_search_and_the_open_note(vault, db_path):
    """The app's watcher is off (a `mindtui watch` service does the watching): the status poll sees
    the other process's import and the views follow; an import that changed nothing is no news."""
    vault.write("Otter.md", "# Otter\n\nOtters hold hands while they sleep.\n")
    service = service_for(vault, db_path)
    app = make_app(service.settings, service=service, load_model=False, poll_status=True, debounce_s=0,
                   watch_vault=False)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_for(pilot, lambda: app.status_info is not None, "the first status read")
            screen = await search_walrus_then_write_it(pilot, vault)
            index_in_another_process(vault, db_path)
            await wait_for(pilot, lambda: [r.path for r in screen.results] == ["Otter.md"], "the search to follow")

            app.open_note("Otter.md")
            await wait_for(pilot, lambda: app.current_mode == "note" and app.screen.note is not None, "the note")
            note_screen, generation = app.screen, app.vault_generation
            index_in_another_process(vault, db_path)  # nothing changed
            await wait_for(pilot, lambda: app.status_info.index_changes != [] and
                           app.status_info.notes == 1 and app._index_seen == max(app.status_info.index_changes),
                           "a poll after the run")
            assert app.vault_generation == generation
            vault.write("Otter.md", "# Otter\n\nOtters hold hands while they sleep; seals do not.\n")
            index_in_another_process(vault, db_path)
            await wait_for(pilot, lambda: "seals do not" in note_screen.note.text, "the note to reload in place")
            assert app.current_mode == "note" and note_screen.back_stack == []
            assert app.vault_generation == generation + 1
    finally:
        service.close()


async def test_the_apps_own_import_is_not_refreshed_again_by_the_status_poll(vault, db_path):
    vault.write("Otter.md", "# Otter\n\nOtters hold hands.\n")
    service = service_for(vault, db_path)
    try:
        app = pilot_app(service)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            vault.write("Otter.md", "# Otter\n\nOtters hold hands while they sleep.\n")
            own = service.run_job("index", steps=["import"])  # what the app's watcher's child ran
            assert own.ok
            app.post_message(VaultChanged(VaultChange("imported", frozenset({"Otter.md"}),
                                                      report={"run_id": own.steps[0].run_id})))
            await settle(pilot)
            assert app.vault_generation == 1 and app.vault_paths == {"Otter.md"}
            app.refresh_status()
            await settle(pilot)
            assert app.vault_generation == 1  # its own run: already shown
            vault.write("Otter.md", "# Otter\n\nSeals do not.\n")
            index_in_another_process(vault, db_path)
            app.refresh_status()
            await settle(pilot)
            assert app.vault_generation == 2 and app.vault_paths == {"."}
        assert service.summary()["index_changes"][0] > own.steps[0].run_id
        with Service(service.settings, audience=Audience.AGENT, models=ModelHolder(embedder_factory=no_model)) as agent:
            assert agent.summary()["index_changes"] == []  # when the owner's vault changed: not for agents
    finally:
        service.close()


async def test_a_notes_text_shows_before_its_chunks_and_neighbours_are_loaded(big_vault, monkeypatch):
    """The first screen waits for the note's text only: its 9,000 chunks and its neighbours come
    after it (held back here until the text is on screen), and a chunk key works once they are in."""
    import threading

    vault, service = big_vault
    release = threading.Event()
    chunks_of = service.note_chunks

    def held_back(name):
        assert release.wait(WAIT_S), "the chunks were never released"
        return chunks_of(name)

    monkeypatch.setattr(service, "note_chunks", held_back)
    app = pilot_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        pages = await open_big(pilot)  # on screen while the chunks are still held back
        screen = app.screen
        assert screen.note.title == "Big" and screen.note.chunks == [] and screen.neighbours is None
        release.set()
        await wait_for(pilot, lambda: screen.note.chunks and screen.neighbours is not None, "the chunks")
        assert len(screen.note.chunks) == len(service.note("Big").chunks) > 100
        assert screen.neighbours.groups["links_out"]  # [[plugin-0]] is in the index
        await pilot.press("n")
        assert screen.chunk_index == 0 and "chunk 1/" in str(screen.query_one("#note-header").render())


async def test_a_big_note_shown_before_its_view_is_laid_out_renders_at_the_views_width(big_vault):
    """A note reloaded while its mode is in the background (the live vault), in a view never laid
    out: its lines wait for the view's width instead of being cut at a guess (80 columns here,
    where the view has 48) and shown so until a resize."""
    vault, service = big_vault
    app = pilot_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        app.open_note("plugin-0")  # a small note: the paged view is never laid out
        await wait_for(pilot, lambda: app.current_mode == "note" and app.screen.note is not None
                       and app.screen.note.path == "plugin-0.md", "the small note")
        note_screen = app.screen
        pages = note_screen.query_one("#note-pages", PagedMarkdown)
        app.action_mode("search")
        await wait_for(pilot, lambda: app.current_mode == "search", "Search")
        note_screen.load("Big", remember=False)  # as a change on disk reloads it
        await wait_for(pilot, lambda: note_screen.note.title == "Big" and note_screen.neighbours is not None,
                       "the big note loaded in the background")
        await pilot.pause()
        app.action_mode("note")
        await wait_for(pilot, lambda: app.current_mode == "note" and pages.line_count > 20, "the first screen")
        width = pages.scrollable_content_region.width
        assert 20 < width < 80
        assert all(len(line) <= width for line in pages.text_lines(0, 30))
