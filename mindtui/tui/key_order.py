"""Keys that arrive together (one terminal read, a paste, a fast typist) are handled one after
the other, each where the one before left the focus.

Textual forwards a key to the focused widget and runs that widget's key bindings only when the
key has bubbled back up to the app; printable keys are typed in the widget itself. With several
keys in the queue the app forwards them all before the first has come back: three Downs all went
to the query field although the first moved the focus to the results, and ctrl+u cleared the
text typed after it. Here the app forwards one key, then sends a KeyPassed marker behind it along
the same way (each queue keeps its order); when the marker is back at the app, the key has been
handled wherever it was, and the next key goes to whatever has the focus now. However long that
takes (a loaded machine, a big note rendering): a marker given up on after a fixed 0.25 s let the
next key overtake a slow one. Only a marker whose widget went away (a key that closed it) is lost.
"""

from __future__ import annotations

from collections import deque

from textual import events
from textual.message import Message

MARKER_CHECK_S = 0.25  # while keys wait: how often they check that their marker's widget is still there


class KeyPassed(Message):
    """Behind a forwarded key: it bubbles along after it, and goes straight to the app from the
    node that stopped the key (a field that typed it): no later node sees the key, so the next
    key need not wait for their queues (a busy screen would hold the typing)."""

    def __init__(self, key: events.Key) -> None:
        super().__init__()
        self.key = key

    def _bubble_to(self, widget) -> None:
        if self.key._stop_propagation:
            self._no_default_action = False
            widget.app.post_message(self)
        else:
            super()._bubble_to(widget)


class KeepsKeyOrder:
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._held_keys: deque[events.Key] = deque()
        self._marker_at = None  # the widget a forwarded key's marker was posted to, until it is back

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and not event.is_forwarded:
            self._held_keys.append(event)
            self._forget_lost_marker()
            await self._send_held_keys()
            return
        await super().on_event(event)

    async def _send_held_keys(self) -> None:
        while self._held_keys and self._marker_at is None:
            key = self._held_keys.popleft()
            await super().on_event(key)  # a priority binding, or forwarded to the focused widget
            if key.is_forwarded:
                self._marker_at = self.focused or self.screen
                self._marker_at.post_message(KeyPassed(key))
        if self._held_keys:
            self.set_timer(MARKER_CHECK_S, self._check_marker)

    def _forget_lost_marker(self) -> None:
        """A marker posted to a widget removed since (the key closed it) never comes back."""
        if self._marker_at is not None and not self._marker_at.is_attached:
            self._marker_at = None

    async def _check_marker(self) -> None:
        self._forget_lost_marker()
        await self._send_held_keys()

    async def on_key_passed(self, message: KeyPassed) -> None:  # by name: @on needs a MessagePump class
        message.stop()
        self._marker_at = None
        await self._send_held_keys()
