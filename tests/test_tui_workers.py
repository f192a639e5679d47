"""An exclusive worker that a newer one cancelled posts nothing: its older answer cannot arrive
last and put the old state back (the Knowledge list after a save, a note after navigating on)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from textual import on, work
from textual.app import App
from textual.message import Message

from mindtui.tui.worker_errors import ReportsWorkerErrors


class Answer(Message):
    def __init__(self, value: str) -> None:
        super().__init__()
        self.value = value


class LoadingApp(ReportsWorkerErrors, App):
    def __init__(self) -> None:
        super().__init__()
        self.release = {"old": threading.Event(), "new": threading.Event()}
        self.started = {"old": threading.Event(), "new": threading.Event()}
        self.finished = {"old": threading.Event(), "new": threading.Event()}
        self.answers: list[str] = []

    @work(thread=True, exclusive=True, exit_on_error=False, group="load")
    def load(self, value: str) -> None:
        self.started[value].set()
        self.release[value].wait(5)
        self.post_unless_cancelled(Answer(value))
        self.finished[value].set()

    @on(Answer)
    def _answer(self, message: Answer) -> None:
        self.answers.append(message.value)


async def test_the_cancelled_older_load_posts_nothing_even_when_it_finishes_last():
    app = LoadingApp()
    async with app.run_test() as pilot:
        old = app.load("old")
        assert await asyncio.to_thread(app.started["old"].wait, 5)
        new = app.load("new")  # the old one is still reading (exclusive: it is cancelled)
        assert old.is_cancelled
        app.release["new"].set()
        await new.wait()
        await asyncio.to_thread(app.finished["new"].wait, 5)
        await pilot.pause()
        assert app.answers == ["new"]
        app.release["old"].set()  # the old one finishes last, as a slow read does
        assert await asyncio.to_thread(app.finished["old"].wait, 5)
        await pilot.pause()
        assert app.answers == ["new"]


class Again(Message):
    pass


class EndlessApp(App):
    """Each worker's answer starts the next, and a worker ends only once its successor runs:
    at any moment one is running."""

    def __init__(self) -> None:
        super().__init__()
        self.successor_runs: list[threading.Event] = []
        self.stop = threading.Event()

    @work(thread=True, exit_on_error=False, group="chain")
    def load(self) -> None:
        if self.successor_runs:
            self.successor_runs[-1].set()
        if self.stop.is_set():
            return
        mine = threading.Event()
        self.successor_runs.append(mine)
        self.post_message(Again())
        mine.wait(30)

    @on(Again)
    def _again(self, message: Again) -> None:
        self.load()


async def test_settle_fails_loudly_while_workers_keep_running():
    from tui_support import settle

    app = EndlessApp()
    async with app.run_test() as pilot:
        app.load()
        with pytest.raises(AssertionError, match="workers still running after 1 rounds"):
            await settle(pilot, rounds=1)
        assert len(app.successor_runs) >= 2
        app.stop.set()
        await settle(pilot)  # the chain ends: settle returns
