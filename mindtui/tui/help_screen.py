"""`?` (or F1): every key binding of the screen underneath and of the app, in one list."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from mindtui.tui.worker_errors import SurvivesErrors

KEY_NAMES = {"question_mark": "?", "left_square_bracket": "[", "right_square_bracket": "]", "slash": "/"}


def key_name(key: str) -> str:
    return ", ".join(KEY_NAMES.get(part, part) for part in key.split(","))


def binding_rows(node) -> list[tuple[str, str]]:
    rows = []
    for binding in node.BINDINGS:
        if isinstance(binding, Binding):
            rows.append((key_name(binding.key), binding.description or binding.action))
        else:  # a (key, action, description) tuple
            key, action, *rest = binding
            rows.append((key_name(key), rest[0] if rest else action))
    return rows


def help_text(screen: Screen, app: App) -> str:
    lines = [f"{type(screen).__name__.removesuffix('Screen')} mode"]
    lines += [f"  {key:<24} {text}" for key, text in binding_rows(screen)]
    lines += [f"  {key:<24} {text}" for key, text in getattr(screen, "help_rows", lambda: [])()]
    lines += ["", "everywhere"]
    lines += [f"  {key:<24} {text}" for key, text in binding_rows(app)]
    lines += ["  1-5, F2-F6               the modes: Search, Note, Curation, Jobs, Knowledge",
              "  ctrl+p                   command palette (every action by name)",
              "  tab, shift+tab           next / previous field", "", "Esc closes this list."]
    return "\n".join(lines)


class HelpScreen(SurvivesErrors, ModalScreen[None]):
    CSS_PATH = "picker.tcss"
    BINDINGS = [Binding("escape,question_mark,q,f1", "close", "Close")]

    def __init__(self, under: Screen, app: App) -> None:
        super().__init__()
        self.text = help_text(under, app)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(self.text, id="help-text")

    def action_close(self) -> None:
        self.dismiss(None)
