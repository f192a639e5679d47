"""`?` (or F1): every key binding of the screen underneath and of the app, in one list.

The app's keys are listed in two groups, from the bindings themselves: keys with a modifier or
a name (ctrl+q, F2, alt+1) work everywhere, also while a text field has the focus; a single
character (q, ?, 1) only where no text field has it (there it is typed). `keys_markdown()`
is the same list as the README's key table (tests/test_tui_keys.py compares them).
"""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from mindtui.tui.worker_errors import SurvivesErrors

KEY_NAMES = {"question_mark": "?", "left_square_bracket": "[", "right_square_bracket": "]", "slash": "/"}
EVERYWHERE = "everywhere, also while typing in a field"
NO_FIELD = "where no text field has the focus (in a field they are typed)"
ALWAYS = [("ctrl+p", "command palette: every action of every mode by name"),
          ("tab, shift+tab", "next / previous field")]


def key_name(key: str) -> str:
    return ", ".join(KEY_NAMES.get(part, part) for part in key.split(","))


def binding_rows(node) -> list[tuple[str, str]]:
    """(keys, description) of a screen's or the app's bindings, keys of one action together;
    then those of the widgets the screen names in KEYED_WIDGETS (the result list's g/G)."""
    by_action: dict[str, tuple[list[str], str]] = {}
    bindings = [*node.BINDINGS, *(b for widget in getattr(node, "KEYED_WIDGETS", ()) for b in widget.BINDINGS)]
    for binding in bindings:
        if isinstance(binding, Binding):
            key, action, description = binding.key, binding.action, binding.description
        else:  # a (key, action, description) tuple
            key, action, *rest = binding
            description = rest[0] if rest else ""
        keys, _ = by_action.setdefault(action, ([], description or action))
        keys.append(key_name(key))
    return [(", ".join(keys), description) for keys, description in by_action.values()]


def is_typed(key: str) -> bool:
    """A key a focused text field types instead of passing it on: one printable character."""
    return len(key) == 1


def app_rows(app) -> dict[str, list[tuple[str, str]]]:
    """The app's keys by where they work (EVERYWHERE, NO_FIELD)."""
    groups: dict[str, dict[str, list[str]]] = {EVERYWHERE: {}, NO_FIELD: {}}
    for binding in app.BINDINGS:
        for key in binding.key.split(","):
            group = NO_FIELD if is_typed(key_name(key)) and not binding.priority else EVERYWHERE
            groups[group].setdefault(binding.description, []).append(key_name(key))
    out = {group: [(", ".join(keys), text) for text, keys in rows.items()] for group, rows in groups.items()}
    out[EVERYWHERE] += ALWAYS
    return out


def help_text(screen: Screen, app: App) -> str:
    lines = [f"{type(screen).__name__.removesuffix('Screen')} mode"]
    lines += [f"  {key:<24} {text}" for key, text in binding_rows(screen)]
    lines += [f"  {key:<24} {text}" for key, text in getattr(screen, "help_rows", lambda: [])()]
    for group, rows in app_rows(app).items():
        lines += ["", group] + [f"  {key:<24} {text}" for key, text in rows]
    return "\n".join(lines + ["", "Esc closes this list."])


def keys_markdown(app_class, modes: dict) -> str:
    """The README's key table: the app's keys, then each mode's, from the bindings."""
    lines = ["| where | keys | what |", "|---|---|---|"]
    for group, rows in app_rows(app_class).items():
        where = "everywhere" if group == EVERYWHERE else "no text field focused"
        lines += [f"| {where} | {_cell(key)} | {text} |" for key, text in rows]
    for mode, screen_class in modes.items():
        rows = binding_rows(screen_class) + list(getattr(screen_class, "KEY_NOTES", ()))
        lines += [f"| {mode} mode | {_cell(key)} | {text} |" for key, text in rows]
    return "\n".join(lines)


def _cell(keys: str) -> str:
    return ", ".join("`" + key.replace("|", "\\|") + "`" for key in keys.split(", "))


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


if __name__ == "__main__":  # the README's table: python -m mindtui.tui.help_screen
    from mindtui.tui.app import MindtuiApp

    print(keys_markdown(MindtuiApp, MindtuiApp.MODES))
