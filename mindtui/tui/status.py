"""The status line every screen shows: database, notes, embedding coverage, models, open cards."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from typing import TYPE_CHECKING

from textual.widgets import Static

from mindtui.tui.literal import literal

if TYPE_CHECKING:
    from mindtui.service import Service


@dataclass
class StatusInfo:
    db: str
    notes: int = 0
    coverage: float = 0.0
    model_state: str = "not loaded"  # not loaded | loading | ready | unavailable
    model_reason: str = ""
    reranker: bool = False
    cards: int = 0
    cards_by_kind: dict[str, int] = field(default_factory=dict)
    error: str = ""
    index_changes: list[int] = field(default_factory=list)  # the newest import runs that changed the index

    @classmethod
    def read(cls, service: "Service") -> "StatusInfo":
        """Runs in a worker thread. A database that cannot be read is a status, not a crash."""
        info = cls(db=Path(service.db_path).name)
        summary = service.summary()
        info.notes, info.coverage, info.index_changes = summary["notes"], summary["coverage"], summary["index_changes"]
        for model in summary["models"]:
            if model["role"] == "embedding":
                info.model_state, info.model_reason = model["status"], model["reason"]
            elif model["role"] == "reranker":
                info.reranker = model["status"] != "unavailable"
        info.cards_by_kind = summary["cards"]
        info.cards = sum(info.cards_by_kind.values())
        return info


def cut(text: str, room: int) -> str:
    """text in `room` columns: cut with an ellipsis when longer."""
    return text if len(text) <= room else text[:max(room - 1, 0)] + "…"


def status_line(info: StatusInfo, width: int) -> str:
    model = info.model_state
    if model == "unavailable" and info.model_reason:
        model = f"unavailable: {info.model_reason}"
    parts = [info.db, f"{info.notes} notes", f"vectors {info.coverage:.0%}", f"model {model}",
             "reranker" if info.reranker else "no reranker", f"{info.cards} cards"]
    return cut(" · ".join(parts), width - 2)


class StatusBar(Static):
    """Shows the app's status_text; every screen has one."""

    def on_mount(self) -> None:
        self.watch(self.app, "status_text", self._show, init=True)

    def _show(self, text: str) -> None:
        self.update(literal(text))  # the database's file name, a model's path in its reason
