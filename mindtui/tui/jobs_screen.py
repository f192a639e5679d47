"""Jobs mode: start the nightly job or one step, watch each step's progress, cancel, and read
the history of runs with their reports and warnings.

A job runs in a child process (`mindtui --job ... --progress json`): parsing and embedding
would hold this process's GIL and starve the screen. A thread here only reads its progress
lines and posts them; search and note reading go on meanwhile.
"""

from __future__ import annotations

import json
import time

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Label, Log, ProgressBar, Static

from mindtui.tui.key_footer import KeyFooter
from mindtui.tui.literal import literal
from mindtui.tui.status import StatusBar, cut
from mindtui.tui.worker_errors import ReportsWorkerErrors

JOB_KEYS = (("n", "nightly", None, "Nightly"), ("i", "index", ["import"], "Import"),
            ("m", "embed", ["embed"], "Embed"), ("g", "graph", ["graph"], "Graph"))
HISTORY_LIMIT = 50
TICK_S = 1.0  # the running step's line changes at least this often


def progress_label(event: dict, estimated: int | None = None, quiet_s: float = 0.0) -> str:
    """done/total, rate and ETA of a progress event. Between reports (`quiet_s` seconds since
    it): `estimated` is the count its rate gives by now (~N) and the ETA counts down."""
    done, total = event.get("done", 0), event.get("total", 0)
    rate, eta = event.get("rate"), event.get("eta_s")
    counted = f"{done:,}/{total:,}"
    if estimated is not None and estimated > done:
        counted = f"~{estimated:,}/{total:,}"
    parts = [counted]
    if rate:
        parts.append(f"{rate:,.1f}/s")
    if eta is not None and done < total:
        parts.append(f"ETA {max(0.0, eta - quiet_s):,.0f}s")
    if quiet_s >= 2 and not rate:
        parts.append(f"{quiet_s:,.0f}s since the last count")
    return "  ".join(parts)


def report_text(run: dict) -> str:
    lines = [f"{run['job']}  {run.get('started_at', '')}  {run.get('status', '')}"]
    for step in run.get("steps", []):
        lines.append(f"\n{step['step']}: {step['status']}" + (f" — {step['error']}" if step.get("error") else ""))
        report = step.get("report") or {}
        counts = {k: v for k, v in report.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        lines += [f"  {k}: {v}" for k, v in counts.items()]
        for warning in (report.get("warnings") or [])[:50]:
            lines.append(f"  ! {warning.get('path', '')}: {warning.get('reason', '')}" if isinstance(warning, dict)
                         else f"  ! {warning}")
        others = {k: v for k, v in report.items() if k not in counts and k not in ("warnings", "traceback")}
        if others:
            lines.append("  " + cut(json.dumps(others, ensure_ascii=False, default=str), 400))
    return "\n".join(lines)


class StepRow(Horizontal):
    """One step of the running job: its name, a bar and its counts.

    Events can come before the row's children exist (a `step` right after `start` mounted the
    row): they wait in `pending` and are applied in order once the row is mounted. While a step
    runs, `tick` (every TICK_S) moves the counts on by the last rate, so the line changes at
    least once a second even when the next report is far off (one embedding batch)."""

    def __init__(self, step: str) -> None:
        super().__init__(classes="step-row", id=f"step-{step}")
        self.step = step
        self.state = "waiting"  # waiting | running | the step_done status
        self.pending: list[dict] = []
        self.last_progress: tuple[float, dict] | None = None  # (monotonic time, event)
        self.started_at: float | None = None
        self._ready = False

    def compose(self) -> ComposeResult:
        yield Label(self.step, classes="step-name")
        # A total from the start: a bar without one is Textual's moving "indeterminate" bar.
        yield ProgressBar(total=1, show_eta=False, show_percentage=True, classes="step-bar")
        yield Label("waiting", classes="step-counts")

    def on_mount(self) -> None:
        self._ready = True
        for event in self.pending:
            self._apply(event)
        self.pending.clear()

    def handle(self, event: dict) -> None:
        if self._ready:
            self._apply(event)
        else:
            self.pending.append(event)

    def _apply(self, event: dict) -> None:
        kind = event.get("event")
        bar = self.query_one(ProgressBar)
        counts = self.query_one(".step-counts", Label)
        now = time.monotonic()
        if kind == "progress":
            self.state = "running"
            self.started_at = self.started_at or now
            self.last_progress = (now, event)
            bar.update(total=max(event.get("total") or 0, 1), progress=event.get("done", 0))
            counts.update(progress_label(event))
        elif kind == "step":
            self.state, self.started_at = "running", now
            bar.update(total=None)  # moving until the first count: the step is at work
            counts.update("running")
        elif kind == "step_done":
            self.state = event.get("status", "") or "done"
            if self.state == "ok":
                bar.update(total=max(bar.total or 1, 1), progress=max(bar.total or 1, 1))
            elif bar.total is None:
                bar.update(total=1, progress=0)  # stopped: not moving any more
            counts.update(literal(self.state + (f": {event['error']}" if event.get("error") else "")))

    def tick(self, now: float) -> None:
        """The counts by the last rate (between reports), or the time the step has run so far."""
        if not self._ready or self.state != "running":
            return
        counts = self.query_one(".step-counts", Label)
        if self.last_progress is None:
            counts.update(f"running  {now - (self.started_at or now):,.0f}s")
            return
        at, event = self.last_progress
        quiet = now - at
        rate, done, total = event.get("rate") or 0.0, event.get("done", 0), event.get("total", 0)
        estimated = min(int(done + rate * quiet), max(total - 1, done))  # never "done" before it says so
        counts.update(progress_label(event, estimated, quiet))


class JobsScreen(ReportsWorkerErrors, Screen):
    CSS_PATH = "jobs_screen.tcss"
    PALETTE = [*[(f"Job: {label}", f"run the {job} job in the background ({key})", f"start('{job}')")
                 for key, job, _, label in JOB_KEYS],
               ("Job: cancel", "stop the running job at a safe point (c)", "cancel"),
               ("Job: reload the history", "read the history of runs again (r)", "reload")]
    BINDINGS = [
        *[Binding(key, f"start('{job}')", label) for key, job, _, label in JOB_KEYS],
        Binding("c", "cancel", "Cancel"),
        Binding("r", "reload", "Reload history", show=False),
    ]

    class JobEvent(Message):
        def __init__(self, event: dict) -> None:
            super().__init__()
            self.event = event

    class History(Message):
        def __init__(self, runs: list[dict]) -> None:
            super().__init__()
            self.runs = runs

    def __init__(self) -> None:
        super().__init__()
        self.process = None
        self.runs: list[dict] = []

    def compose(self) -> ComposeResult:
        yield Static("n nightly · i import · m embed · g graph · c cancel", id="jobs-help", classes="one-line")
        with Vertical(id="job-live"):
            yield Static("no job running", id="job-state", classes="one-line")
            yield Vertical(id="job-steps")
            yield Log(id="job-log", max_lines=200, classes="hidden")  # shown with its first line
        with Horizontal(id="job-history-body"):
            yield DataTable(id="job-history", cursor_type="row", zebra_stripes=False)
            with VerticalScroll(id="job-report-scroll"):
                yield Static("", id="job-report")
        yield StatusBar()
        yield KeyFooter()

    def on_mount(self) -> None:
        table = self.query_one("#job-history", DataTable)
        table.add_columns("started", "job", "status", "time")
        table.focus()  # Up/Down move through the runs from the first key (nothing had the focus)
        self.load_history()
        if self.app.poll_status:  # the app's clock-driven updates (off in Pilot and snapshot tests)
            self.set_interval(TICK_S, self._tick)

    def _tick(self) -> None:
        now = time.monotonic()
        for row in self.query(StepRow):
            row.tick(now)

    def on_screen_resume(self) -> None:
        self.query_one("#job-history", DataTable).focus()
        self.load_history()

    # -- history -------------------------------------------------------------------------
    @work(thread=True, exclusive=True, exit_on_error=False, group="job-history")
    def load_history(self) -> None:
        self.post_unless_cancelled(self.History(self.app.service.job_history(limit=HISTORY_LIMIT)))

    @on(History)
    def _history(self, message: History) -> None:
        self.runs = message.runs
        table = self.query_one("#job-history", DataTable)
        table.clear()
        for index, run in enumerate(message.runs):
            duration = run.get("seconds")
            table.add_row((run.get("started_at") or "")[:16].replace("T", " "), run["job"], run.get("status", ""),
                          f"{duration:,.0f}s" if duration is not None else "", key=str(index))
        self._show_report()

    @on(DataTable.RowHighlighted, "#job-history")
    def _row(self) -> None:
        self._show_report()

    def _show_report(self) -> None:
        table = self.query_one("#job-history", DataTable)
        row = table.cursor_row
        text = report_text(self.runs[row]) if self.runs and 0 <= row < len(self.runs) else "no job has run yet"
        self.query_one("#job-report", Static).update(literal(text, lines=True))

    def action_reload(self) -> None:
        self.load_history()

    # -- running -------------------------------------------------------------------------
    def action_start(self, job: str) -> None:
        if self.process is not None and self.process.running:
            self.notify("a job is running: cancel it (c) or wait", severity="warning")
            return
        steps = next(s for _, name, s, _ in JOB_KEYS if name == job)
        self.query_one("#job-steps").remove_children()
        self.query_one("#job-log", Log).clear().add_class("hidden")
        self.query_one("#job-state", Static).update(f"{job}: starting…")
        self.run_job(job, steps)

    @work(thread=True, exclusive=True, exit_on_error=False, group="job-run")
    def run_job(self, job: str, steps: list[str] | None) -> None:
        # The child's events come from its reader thread (a daemon: quitting does not wait for the
        # job, which goes on by itself), not from this worker, which ends once the child is started.
        self.process = self.app.service.start_job(job, steps=steps, on_event=self._from_child)
        self.app.jobs.append(self.process)

    def _from_child(self, event: dict) -> None:
        """In the job's reader thread: each event, the last one `exit`, as a message."""
        self.post_message(self.JobEvent(event))

    def action_cancel(self) -> None:
        if self.process is None or not self.process.running:
            self.notify("no job is running")
            return
        self.process.cancel()
        self.query_one("#job-state", Static).update("cancelling: the step stops at its next safe point…")

    @on(JobEvent)
    def _job_event(self, message: JobEvent) -> None:
        event = message.event
        kind = event.get("event")
        state = self.query_one("#job-state", Static)
        if kind == "start":
            state.update(f"{event.get('job')}: running (pid {event.get('pid')})")
            for step in event.get("steps", []):
                self.query_one("#job-steps").mount(StepRow(step))
        elif kind in ("step", "progress", "step_done"):
            self._step_row(event["step"]).handle(event)
        elif kind in ("message", "log"):
            log = self.query_one("#job-log", Log)
            log.remove_class("hidden")
            log.write_line(event.get("text", ""))
        elif kind == "result":
            state.update(f"{event.get('job')}: {'ok' if event.get('ok') else 'finished with problems'}")
        elif kind == "exit":
            code = event.get("returncode")
            if code == 3:
                state.update("another job is running on this database; try again when it has finished")
            elif code == 130:
                state.update("cancelled: everything committed so far is kept; the next run continues")
            elif code not in (0, None):
                state.update(f"the job ended with exit code {code}")
            self.load_history()
            self.app.refresh_status()

    def _step_row(self, step: str) -> StepRow:
        rows = [row for row in self.query(StepRow) if row.step == step]
        if rows:
            return rows[0]
        row = StepRow(step)
        self.query_one("#job-steps").mount(row)
        return row
