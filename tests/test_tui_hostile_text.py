"""Note data that looks like markup or terminal control, through every screen of the TUI.

A vault whose file names, titles, aliases, tags, headings, body text, links and knowledge
callouts hold Textual/Rich markup (`[/]`, `[bold]`, `[@click=app.quit]`, `[link=x]`) and
control characters (ESC sequences, BEL, NUL, DEL, C1), imported with the real service. Every
screen must show that text as it is written: no MarkupError (which ended the app while it drew),
no clickable action from a title, no ESC or other control character reaching the terminal
(each is drawn as a visible sign, see mindtui.tui.literal)."""

from __future__ import annotations

import pytest
from tui_support import build_fixed_db, owner_service, pilot_app, settle

from mindtui.tui.confirm_writes import ConfirmWrites
from mindtui.tui.knowledge_form import KnowledgeForm
from mindtui.tui.knowledge_screen import KnowledgeScreen
from mindtui.tui.literal import literal, visible
from mindtui.tui.note_pages import PagedMarkdown
from mindtui.tui.note_screen import NoteScreen
from mindtui.tui.picker import NoteSearchPicker, PickerScreen

CLICK_TITLE = "[@click=app.quit]Klick[/]"
ESCAPE_TITLE = "Rot \x1b[31m Titel \x1b]0;pwned\x07 NUL\x00 Ende"
SHOWN_ESCAPE_TITLE = "Rot ␛[31m Titel ␛]0;pwned␇ NUL␀ Ende"
CALLOUT = "[@click=app.quit]Wichtig[/] ist \x1b[31mrot"
HOSTILE_BODY = ("Zeppelinwort mit [/] und [bold]fett[/bold] und \x1b[31mrot\x1b[0m und \x1b]0;title\x07 Ende.\n"
                "Glocke \x07 Rückschritt \x08 DEL \x7f CSI \x9b31m.\n")

NOTES = {
    "Notiz [bold]fett.md": (
        "---\n"
        f'title: "{CLICK_TITLE}"\n'
        'aliases: ["[red]rot[/red]", "[/]"]\n'
        'tags: ["[b]", "x[/]"]\n'
        'quelle: "[link=https://example.org]hier[/link] [/] \\e[31mrot"\n'
        "---\n"
        "# Kopf [/] mit [link=x]Link[/link] \x1b[31mrot\n\n"
        f"{HOSTILE_BODY}\n"
        f"{'W' * 300}\n\n"
        "Link auf [[Fehlt \x1b rot]] und auf [[Escape]].\n\n"
        "```\ncode [/] \x1b[32mgrün [@click=app.quit]x[/]\n```\n\n"
        f"> [!fact] {CALLOUT}\n"
        "> about: topic: [/] Thema\n"
        "> Details mit \x1b[2J und [/]\n"
    ),
    "Preis [50%].md": '---\ntitle: "[/]"\n---\nZeppelinwort kostet [dim]50%[/dim] und [/].\n',
    "a [[b.md": "# a [[b\n\nZeppelinwort im Namen, Link auf [[Notiz [bold]fett]].\n",
    "Escape.md": (
        "---\n"
        'title: "Rot \\e[31m Titel \\e]0;pwned\\a NUL\\0 Ende"\n'
        "---\n"
        "Zeppelinwort und \x1b[2J weg. Link auf [[Notiz [bold]fett]].\n"
    ),
    "Steuer\x1b[31mzeichen.md": "Zeppelinwort im Namen mit Escape.\n",
    # Past PAGED_FROM: the page-by-page view (Rich's Markdown and a Rich table of the frontmatter).
    "Lang [b].md": ('---\ntitle: "Lang [@click=app.quit]x[/]"\nquelle: "[/] \\e[31m"\n---\n'
                    + "\n".join(f"Absatz {n}: Zeppelinwort [/] [bold]x \x1b[31m rot." for n in range(700)) + "\n"),
}


@pytest.fixture
def service(tmp_path):
    root = tmp_path / "vault"
    root.mkdir()
    for name, text in NOTES.items():
        (root / name).write_text(text, encoding="utf-8")
    (root / "Binär [b].md").write_bytes(b"\x00\x01 binary [/]")  # skipped: its warning names it
    db_path = tmp_path / "store" / "mind [b].db"  # the status line shows the file's name
    build_fixed_db(root, db_path)
    with owner_service(db_path, vault=str(root)) as service:
        yield service


def rendered(app) -> list[list]:
    """The screen on top as the terminal gets it: its lines of segments."""
    return [list(strip) for strip in app.screen._compositor.render_strips()]


async def press_down_until(pilot, condition, limit: int = 10) -> None:
    for _ in range(limit):
        await settle(pilot)
        if condition():
            return
        await pilot.press("down")
    raise AssertionError(f"not there after {limit} Downs")


def screen_text(app) -> str:
    return "\n".join("".join(segment.text for segment in line) for line in rendered(app))


async def shows(pilot, *texts: str) -> str:
    """Settle, then check the screen: the app runs on without an error, every text is on it as
    written, no control character reaches the terminal and no segment carries an action of the
    app (a title's `[@click=app.quit]`). Returns the screen's text."""
    await settle(pilot)
    app = pilot.app
    assert app.is_running and app.errors == [], app.errors
    problems = []
    for line in rendered(app):
        for segment in line:
            controls = [c for c in segment.text if ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0]
            if controls:
                problems.append(f"control characters {controls} in {segment.text!r}")
            click = (segment.style.meta if segment.style else {}).get("@click")
            if click and "app." in str(click):
                problems.append(f"action {click!r} on {segment.text!r}")
    assert not problems, problems
    text = screen_text(app)
    for expected in texts:
        assert expected in text, f"{expected!r} is not on the screen:\n{text}"
    return text


async def test_search_shows_titles_paths_snippets_and_the_explanation_as_written(service):
    app = pilot_app(service)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await pilot.press(*"Zeppelinwort")
        await shows(pilot, CLICK_TITLE, "Notiz [bold]fett.md", "Preis [50%].md", "a [[b.md", SHOWN_ESCAPE_TITLE,
                    "Steuer␛[31mzeichen.md", "mind [b].db")
        await pilot.press("ctrl+r")  # the explain panel beside the list
        await press_down_until(pilot, lambda: app.screen.selected().title == CLICK_TITLE)
        await shows(pilot, CLICK_TITLE, "score")


async def test_the_note_mode_shows_header_properties_body_neighbours_and_links_as_written(service):
    app = pilot_app(service)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        app.open_note("Notiz [bold]fett.md")
        text = await shows(pilot, f"{CLICK_TITLE}  ·  note  ·  Notiz [bold]fett.md  ·  #[b] #x[/]",
                           "[red]rot[/red], [/]", "[link=https://example.org]hier[/link]", "[/] ␛[31mrot")
        screen = app.screen
        assert "Kopf [/] mit [link=x]Link[/link] ␛[31mrot" in text
        assert "Zeppelinwort mit [/] und [bold]fett[/bold]" in text and "und ␛[31mrot␛[0m und ␛]0;title␇" in text
        assert "CSI �31m" in text
        screen.query_one("#note-scroll").scroll_to(y=20, animate=False)
        await shows(pilot, "code [/] ␛[32mgrün [@click=app.quit]x[/]", "FACT · [@click=app.quit]Wichtig[/] ist",
                    "mit ␛[2J und [/]")
        await pilot.press("tab")  # the neighbours: the callout's item, the note it links to
        await press_down_until(pilot, lambda: "fact · draft" in screen_text(app))  # the item's detail
        await shows(pilot, "[@click=app.quit]Wichtig[/] ist")
        for _ in range(3):
            await pilot.press("down")
            await shows(pilot)
        await pilot.press("n")  # one chunk: its heading path in the header
        await shows(pilot, "Kopf [/] mit [link=x]Link[/link] ␛[31mrot  ·  lines")
        await pilot.press("y")  # the notice says the copied link as written
        await shows(pilot, f"copied [[{CLICK_TITLE}]]")
        await pilot.press("l")  # the link picker
        assert isinstance(app.screen, PickerScreen)
        await shows(pilot, "Fehlt ␛ rot", "Escape")
        await pilot.press("escape")
        app.open_note("Escape.md")
        await shows(pilot, f"{SHOWN_ESCAPE_TITLE}  ·  note  ·  Escape.md", "Zeppelinwort und ␛[2J weg.",
                    "backlinks (1)", "[@click=app.quit]Kli…")  # the tree's label of the note linking here
        app.open_note("Preis [50%].md")
        await shows(pilot, "[/]  ·  note  ·  Preis [50%].md", "Zeppelinwort kostet [dim]50%[/dim] und [/].")


async def test_a_long_note_shows_its_properties_and_pages_as_written(service):
    app = pilot_app(service)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        app.open_note("Lang [b].md")
        await settle(pilot)
        pages = app.screen.query_one("#note-pages", PagedMarkdown)
        assert pages.display and pages.line_count > 20
        await shows(pilot, "Lang [@click=app.quit]x[/]  ·  note  ·  Lang [b].md", "[/] ␛[31m",
                    "Absatz 0: Zeppelinwort [/] [bold]x ␛[31m rot.")


async def test_a_note_deleted_on_disk_while_open_is_said_as_written(service):
    app = pilot_app(service)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        app.open_note("Notiz [bold]fett.md")
        await shows(pilot, CLICK_TITLE)
        (service.settings.vault / "Notiz [bold]fett.md").unlink()
        assert service.run_job("index", steps=["import"]).ok
        app.vault_paths = frozenset({"Notiz [bold]fett.md"})  # what the live vault's watcher reports
        app.vault_generation += 1
        await shows(pilot, f"{CLICK_TITLE}  ·  deleted on disk", "Notiz [bold]fett.md was deleted on")
        assert isinstance(app.screen, NoteScreen)


async def test_curation_shows_cards_pickers_and_the_dry_run_as_written(service):
    app = pilot_app(service)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await pilot.press("tab", "3")
        await settle(pilot)
        cards = app.screen.cards
        card = next(c for c in cards if c.payload.get("target") == "Fehlt \x1b rot")
        await press_down_until(pilot, lambda: app.screen.selected() is card)
        await shows(pilot, f"{CLICK_TITLE} -> [[Fehlt", "no note named")
        await pilot.press("r")  # retarget: find the note, the link's target typed in
        assert isinstance(app.screen, NoteSearchPicker)
        await shows(pilot, "Fehlt ␛ rot")
        await pilot.press("ctrl+u", *"kostet")
        await shows(pilot, "[/]  (Preis [50%].md)")  # the note found, as written
        await pilot.press("enter")  # the dry run of the link rewritten: the source note's lines
        await settle(pilot)
        assert isinstance(app.screen, ConfirmWrites), [n.message for n in app._notifications]
        await shows(pilot, "retarget card #", "Notiz [bold]fett.md", "Link auf [[")
        await pilot.press("escape")  # nothing written
        await shows(pilot, f"{CLICK_TITLE} -> [[Fehlt")


async def test_knowledge_shows_items_and_the_edit_form_as_written_and_keeps_the_text(service):
    app = pilot_app(service)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await pilot.press("tab", "5")
        await settle(pilot)
        assert isinstance(app.screen, KnowledgeScreen)
        await shows(pilot, "▸ topic: [/] Thema", "[@click=app.quit]Wichtig[/] ist")
        item = app.screen.detail
        assert item.title == CALLOUT
        await pilot.press("e")
        await settle(pilot)
        form = app.screen
        assert isinstance(form, KnowledgeForm)
        await shows(pilot, "[@click=app.quit]Wichtig[/] ist ␛[31mrot")
        assert form.fields()["title"] == CALLOUT  # drawn with its signs, kept as it is
        await pilot.press("escape")
        await shows(pilot)


async def test_the_jobs_report_names_a_skipped_file_as_written(service):
    app = pilot_app(service)
    async with app.run_test(size=(80, 40), notifications=True) as pilot:
        await pilot.press("tab", "4")
        await settle(pilot)
        table = app.screen.query_one("#job-history")
        runs = app.screen.runs
        import_row = next(n for n, run in enumerate(runs)
                          if any(step["step"] == "import" for step in run.get("steps", [])))
        table.move_cursor(row=import_row)
        await shows(pilot, "! Binär [b].md: binary content")


def test_visible_shows_every_control_character_as_one_sign_and_leaves_markup_alone():
    assert visible("a\x1b[31mb\x00\x07\x7f\x9b\tc\nd") == "a␛[31mb␀␇␡\ufffd␉c␊d"
    assert visible("a\tb\nc\x1b", lines=True) == "a\tb\nc␛"
    for code in [*range(0x20), *range(0x7F, 0xA0)]:
        assert visible(chr(code)) != chr(code)
        assert (visible(chr(code), lines=True) == chr(code)) == (chr(code) in "\n\t")
    text = "".join(map(chr, range(0xA0)))
    assert len(visible(text)) == len(text)  # one for one: highlight offsets and cut() stay right
    assert visible("Rechnung\u202efdp.exe \u2066x\u2069", lines=True) == "Rechnung\ufffdfdp.exe \ufffdx\ufffd"
    assert visible("ls\u2028rm\u2029", lines=True) == "ls\ufffdrm\ufffd"  # a line break only where \n is
    assert visible("\u05e9\u200f 👩\u200d💻") == "\u05e9\u200f 👩\u200d💻"  # marks and joiners stay
    assert literal("[/] [@click=app.quit]x[/]").plain == "[/] [@click=app.quit]x[/]"
    assert not literal("[bold]x").spans


async def test_the_cursor_and_a_click_in_a_field_count_a_control_character_as_its_sign(service):
    """A pasted control character is drawn as one sign; the Input counted it as no column, so
    the cursor sat one column left per such character and a click landed one letter off."""
    app = pilot_app(service)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        field = app.screen.query_one("#query")
        field.value = "x\x07\x1byz"  # drawn "x␇␛yz"
        await pilot.press("end", "left", "left")
        await settle(pilot)
        assert field.cursor_position == 3  # before the y
        assert field.cursor_screen_offset.x - field.content_region.x == 3
        assert field.value == "x\x07\x1byz", repr(field.value)
        await shows(pilot, "x␇␛yz")
        await pilot.click("#query", offset=(field.content_region.x - field.region.x + 4, field.content_region.y - field.region.y))
        await settle(pilot)
        assert field.cursor_position == 4  # the z's column: before the z
