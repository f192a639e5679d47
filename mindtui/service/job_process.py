"""A job in a child process (`mindtui --job NAME --progress json`), watched from this one.

Front ends that must stay responsive (the TUI) run long jobs so: pure-Python parsing holds the
GIL and would starve a thread-based UI. The child reports JSON lines on stderr (see
`mindtui.console.JsonProgress`: start, step, progress, message, step_done, result, error) and
prints its result on stdout. A reader thread turns each stderr line into an event dict; a line
that is not an event (a traceback, a warning) becomes `{"event": "log", "text": ...}`. When the
child has exited, one last event `{"event": "exit", ...}` carries the outcome.

The child sees exactly this process's settings: the values the user chose (file, environment,
overrides made in code with `Settings.with_values`) are written to a private temporary config
file (`MINDTUI_CONFIG_FILE`; the child deletes it once read) and the MINDTUI_* variables are not passed on. Only those: the
child takes defaults from the bundled file and learnt values from the database itself, so a
learnt value stays learnt there (the nightly fit may replace it) instead of looking user-set. It runs in its own session, so a Ctrl-C or hang-up
meant for the terminal does not reach it: stop it with `cancel()`.
"""

from __future__ import annotations

import collections
import datetime
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Mapping

import yaml

from mindtui.config import CONFIG_FILE_ENV, ENV_PREFIX, Settings
from mindtui.errors import EXIT_INTERRUPTED, EXIT_LOCKED, EXIT_OK

STDERR_TAIL = 50
EventCallback = Callable[[dict], None]


@dataclass
class JobOutcome:
    returncode: int
    result: dict | None  # the `result` event: job, batch_id, ok, cancelled, steps (reports summarised)
    output: dict | None = None  # what the child printed on stdout (--json): the full reports
    error: str | None = None  # the `error` event's text when the job could not run (lock, config, database)
    stderr_tail: list[str] = field(default_factory=list)  # the last lines that were not events

    @property
    def ok(self) -> bool:
        return self.returncode == EXIT_OK

    @property
    def locked(self) -> bool:
        """Another job holds this database's lock: nothing ran."""
        return self.returncode == EXIT_LOCKED

    @property
    def cancelled(self) -> bool:
        return self.returncode == EXIT_INTERRUPTED or bool(self.result and self.result.get("cancelled"))

    def as_event(self) -> dict:
        return {"event": "exit", "returncode": self.returncode, "ok": self.ok, "locked": self.locked,
                "cancelled": self.cancelled, "error": self.error}


def job_command(db_path: Path, job: str, steps: list[str] | None = None, vault: Path | None = None,
                allow_mass_delete: bool = False, when_told: bool = False) -> list[str]:
    command = [sys.executable, "-m", "mindtui", "--db", str(db_path), "--job", job, "--progress", "json", "--json"]
    if when_told:
        command.append("--when-told")
    if steps is not None:
        command += ["--steps", ",".join(steps)]
    if vault is not None:
        command += ["--vault", str(vault)]
    if allow_mass_delete:
        command.append("--allow-mass-delete")
    return command


def parse_line(line: str) -> dict:
    """An event from one stderr line; anything else as a `log` event."""
    text = line.rstrip("\r\n")
    if text.startswith("{"):
        try:
            event = json.loads(text)
        except json.JSONDecodeError:
            event = None
        if isinstance(event, dict) and isinstance(event.get("event"), str):
            return event
    return {"event": "log", "text": text}


class JobProcess:
    """One job in a child process. Build it with `Service.start_job`.

    Events go to `on_event` (called from a reader thread: hand them to the UI thread yourself)
    or, without a callback, to `events()`. `cancel()` asks the child to stop at its next safe
    point; `wait()` returns the JobOutcome.
    """

    def __init__(self, settings: Settings, job: str, *, steps: list[str] | None = None, vault: Path | None = None,
                 allow_mass_delete: bool = False, on_event: EventCallback | None = None,
                 when_told: bool = False) -> None:
        """The child runs jobs.child_nice nicer than this process: its parsing and embedding take
        the cores only when the front end (keys, rendering) does not need them. when_told: the
        child starts (Python, imports: ~1 s under load) and waits; `go()` runs the job at once,
        `dismiss()` lets it exit without running."""
        self.job = job
        self.command = job_command(settings.db_path, job, steps, vault, allow_mass_delete, when_told)
        self._on_event = on_event
        self._queue: queue.Queue[dict] | None = None if on_event else queue.Queue()
        self._lock = threading.Lock()
        self._started = False  # the child sent `start`: its signal handlers are in place
        self._cancel_asked = False
        self._result: dict | None = None
        self._error: str | None = None
        self._tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL)
        self._stdout = ""
        self._outcome: JobOutcome | None = None
        self._done = threading.Event()
        self._config = _write_config(settings)
        try:
            self._proc = subprocess.Popen(
                self.command, stdin=subprocess.PIPE if when_told else subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=_child_env(self._config), text=True, encoding="utf-8", errors="replace", bufsize=1,
                start_new_session=True)
        except OSError:
            self._config.unlink(missing_ok=True)
            raise
        _lower_priority(self._proc.pid, settings.jobs.child_nice)
        self._stdout_reader = threading.Thread(target=self._read_stdout, name=f"job-{job}-stdout", daemon=True)
        self._stderr_reader = threading.Thread(target=self._read_stderr, name=f"job-{job}-events", daemon=True)
        self._stdout_reader.start()
        self._stderr_reader.start()

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def running(self) -> bool:
        """True until the child has exited and its output is read."""
        return not self._done.is_set()

    def cancel(self) -> None:
        """Stop at the next safe point (SIGINT): the step is recorded as cancelled, exit code 130.
        Asked before the child is ready, it is sent when the child says `start`; asked again, nothing more."""
        with self._lock:
            if self._cancel_asked:
                return  # once is enough (a second SIGINT would stop the child at once: use kill())
            self._cancel_asked = True
            ready = self._started
        if ready:
            self._signal(signal.SIGINT)

    def go(self) -> None:
        """Run the job now (a child started with when_told)."""
        self._tell("go\n")

    def dismiss(self) -> None:
        """Let a waiting child (when_told) exit without running; a running one is not affected."""
        self._tell("")

    def _tell(self, line: str) -> None:
        stdin = self._proc.stdin
        if stdin is None or stdin.closed:
            return
        try:
            stdin.write(line)
            stdin.close()
        except (BrokenPipeError, OSError):  # it exited already: its outcome says why
            return

    def kill(self) -> None:
        """Stop at once (SIGKILL); the step stays `running` until the next job marks it interrupted."""
        self._signal(signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> JobOutcome:
        """The outcome once the child has exited; TimeoutError if it is still running after `timeout` s."""
        if not self._done.wait(timeout):
            raise TimeoutError(f"job {self.job!r} (pid {self.pid}) still running after {timeout} s")
        assert self._outcome is not None
        return self._outcome

    def events(self, timeout: float | None = None) -> Iterator[dict]:
        """Every event in order, ending with `exit` (only without an on_event callback).
        TimeoutError when no event comes within `timeout` s."""
        if self._queue is None:
            raise RuntimeError("this JobProcess hands its events to on_event")
        while True:
            try:
                event = self._queue.get(timeout=timeout)
            except queue.Empty:
                raise TimeoutError(f"job {self.job!r}: no event within {timeout} s") from None
            yield event
            if event["event"] == "exit":
                return

    # -- reader threads --------------------------------------------------------------------
    def _signal(self, signum: int) -> None:
        if self._proc.poll() is None:
            try:
                self._proc.send_signal(signum)
            except ProcessLookupError:  # it exited in between
                return

    def _deliver(self, event: dict) -> None:
        if self._on_event is not None:
            try:
                self._on_event(event)
            except Exception as exc:  # a broken callback must not stop the reading (the child would block)
                self._tail.append(f"on_event failed on a {event['event']!r} event: {type(exc).__name__}: {exc}")
        else:
            assert self._queue is not None
            self._queue.put(event)

    def _read_stdout(self) -> None:
        assert self._proc.stdout is not None
        self._stdout = self._proc.stdout.read()

    def _read_stderr(self) -> None:
        assert self._proc.stderr is not None
        try:
            for line in self._proc.stderr:
                self._handle(parse_line(line))
        finally:
            self._finish()

    def _handle(self, event: dict) -> None:
        kind = event["event"]
        if kind == "start":
            with self._lock:
                self._started = True
                send = self._cancel_asked
            if send:
                self._signal(signal.SIGINT)
        elif kind == "result":
            self._result = {k: v for k, v in event.items() if k != "event"}
        elif kind == "error":
            self._error = event.get("text")
        elif kind == "log":
            self._tail.append(event["text"])
        self._deliver(event)

    def _finish(self) -> None:
        self._stdout_reader.join()
        returncode = self._proc.wait()
        self._config.unlink(missing_ok=True)
        try:
            output = json.loads(self._stdout) if self._stdout.strip() else None
        except json.JSONDecodeError:
            output = None
            self._tail.append(f"(stdout is not JSON: {self._stdout[:200]!r})")
        self._outcome = JobOutcome(returncode, self._result, output if isinstance(output, dict) else None,
                                   self._error, list(self._tail))
        try:
            self._deliver(self._outcome.as_event())
        finally:
            self._done.set()


def _lower_priority(pid: int, nice: int) -> None:
    """Right after the spawn the child is one thread (Python starts none of its own), and the
    threads it starts later (llama.cpp's) inherit its priority."""
    if nice <= 0:
        return
    try:
        os.setpriority(os.PRIO_PROCESS, pid, min(19, os.getpriority(os.PRIO_PROCESS, 0) + nice))
    except (ProcessLookupError, PermissionError):  # it is gone already, or a policy forbids it: it runs as it is
        return


_CONFIG_PREFIX, _CONFIG_SUFFIX = "mindtui-job-", ".yaml"


def _write_config(settings: Settings) -> Path:
    """The user's chosen settings as a private config file for the child (mkstemp: readable by
    this user only). The child deletes it once read (`discard_job_config`), the parent when the
    child has exited (if the child could not)."""
    fd, name = tempfile.mkstemp(prefix=_CONFIG_PREFIX, suffix=_CONFIG_SUFFIX)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        yaml.safe_dump(settings.chosen_data(), handle, allow_unicode=True)
    return Path(name)


def discard_job_config(env: Mapping[str, str]) -> None:
    """In the child, its settings loaded: delete the config file a parent wrote for it, so a
    parent killed while this child waits leaves no copy of the user's settings behind. Only such
    a file (in the temp folder, named by `_write_config`): a user's own MINDTUI_CONFIG_FILE stays."""
    name = env.get(CONFIG_FILE_ENV)
    if not name:
        return
    path = Path(name)
    if (path.parent == Path(tempfile.gettempdir()) and path.name.startswith(_CONFIG_PREFIX)
            and path.name.endswith(_CONFIG_SUFFIX)):
        path.unlink(missing_ok=True)


def _child_env(config: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
    env[CONFIG_FILE_ENV] = str(config)
    env["PYTHONIOENCODING"] = "utf-8"
    return env


# -- history (the Jobs screen) ----------------------------------------------------------------------

STATUS_ORDER = ("running", "failed", "interrupted", "cancelled", "ok")  # a batch shows the first its steps have


def _seconds(started: str | None, ended: str | None) -> float | None:
    if not started or not ended:
        return None
    try:
        return (datetime.datetime.fromisoformat(ended) - datetime.datetime.fromisoformat(started)).total_seconds()
    except ValueError:  # a hand-edited row
        return None


def batch_summary(runs: list) -> dict:
    """One job invocation from its job_runs rows (store.jobs.JobRun, in the order they ran)."""
    statuses = {run.status for run in runs}
    started, ended = runs[0].started_at, runs[-1].ended_at
    return {
        "batch_id": runs[0].batch_id, "job": runs[0].job,
        "status": next((s for s in STATUS_ORDER if s in statuses), runs[-1].status),
        "started_at": started, "ended_at": None if "running" in statuses else ended,
        "seconds": None if "running" in statuses else _seconds(started, ended),
        "steps": [{"run_id": run.run_id, "step": run.step, "status": run.status, "started_at": run.started_at,
                   "ended_at": run.ended_at, "seconds": _seconds(run.started_at, run.ended_at),
                   "report": run.report, "error": run.error} for run in runs],
    }
