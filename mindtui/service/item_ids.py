"""What an agent calls a knowledge item.

An item's id is its row id: it counts every item ever made, hidden ones too, so an agent that
sees items 4 and 7 or proposes one and is told 12 after 9 would learn that hidden items exist
and when the owner made them. An agent is told another number instead: the row id through a
keyed permutation (a four-round Feistel network over 32 bits: ten digits at most), with a key
drawn once per database (migration 0021, `meta`). The numbers keep no order and leave no gaps;
the same item keeps its number. A number it was not told may name an item, as any guess may: a
hidden item answers it as a number that names none does ("no knowledge item").
"""

from __future__ import annotations

import hashlib
import hmac

import apsw

KEY = "agent_item_key"  # meta
_HALF = 16
_MASK = (1 << _HALF) - 1
_ROUNDS = 4
LARGEST = 1 << (2 * _HALF)  # agent ids run from 1 to this


class ItemIds:
    """The two-way mapping of one database (its key read once)."""

    def __init__(self, key: bytes) -> None:
        self._key = key

    @classmethod
    def of(cls, conn: apsw.Connection) -> "ItemIds":
        row = conn.execute("SELECT value FROM main.meta WHERE key = ?", (KEY,)).fetchone()
        if row is None:
            raise LookupError(f"no {KEY} in meta: the schema is older than migration 0021")
        return cls(bytes.fromhex(row[0]))

    def _f(self, round_: int, half: int) -> int:
        digest = hmac.new(self._key, bytes([round_]) + half.to_bytes(2, "big"), hashlib.sha256).digest()
        return int.from_bytes(digest[:4], "big") & _MASK

    def public(self, item_id: int | None) -> int | None:
        """The number an agent is told for the item with this row id."""
        if item_id is None:
            return None
        if not 0 <= item_id < LARGEST:
            raise ValueError(f"item id {item_id} out of range")
        left, right = item_id >> _HALF, item_id & _MASK
        for round_ in range(_ROUNDS):
            left, right = right, left ^ self._f(round_, right)
        return ((left << _HALF) | right) + 1

    def row(self, public: int) -> int | None:
        """The row id of the item an agent names by `public`; None for a number out of range."""
        if not isinstance(public, int) or isinstance(public, bool) or not 1 <= public <= LARGEST:
            return None
        value = public - 1
        left, right = value >> _HALF, value & _MASK
        for round_ in reversed(range(_ROUNDS)):
            left, right = right ^ self._f(round_, left), left
        return (left << _HALF) | right
