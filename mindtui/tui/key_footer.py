"""The key footer every screen docks at its bottom: Textual's Footer, recomposed only when what it
shows changes.

Textual's Footer mounts a widget per key (CSS matched for each) again whenever the screen says its
bindings may have changed: on every focus move and mode switch, even when the keys shown stay the
same. Opening a note from Search recomposed it 15 times (70-100 ms of the event loop, the note's
first screen and the keys behind it waiting); the keys shown changed once or twice.
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer


class KeyFooter(Footer):
    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._shown: tuple | None = None  # what the last composition showed

    def shown_keys(self) -> tuple:
        """What the footer would show now: each key shown with its label, action and state, and
        the command palette's key."""
        active = self.screen.active_bindings
        shown = tuple((binding.key, self.app.get_key_display(binding), binding.description, binding.action,
                       enabled, tooltip, binding.group)
                      for (_, binding, enabled, tooltip) in active.values() if binding.show)
        palette = active.get(self.app.COMMAND_PALETTE_BINDING) if self.show_command_palette else None
        return shown, palette[1:] if palette is not None else None, self.compact

    def compose(self):
        self._shown = self.shown_keys() if self._bindings_ready else None
        yield from super().compose()

    def bindings_changed(self, screen: Screen) -> None:
        if self._bindings_ready and self.is_attached and screen is self.screen and self.shown_keys() == self._shown:
            return  # the same keys: mounting them again would change nothing on screen
        super().bindings_changed(screen)
