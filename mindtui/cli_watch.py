"""`mindtui watch`: the live vault, headless (see jobs.watch and the README's Live vault)."""

from __future__ import annotations

import signal
import threading

from mindtui.cli_text import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, print_warnings, to_stderr, watch_line
from mindtui.service import Service


def watch(args, service: Service) -> int:
    """Until SIGINT (exit 130) or SIGTERM (exit 0: how systemd stops a unit); each run's outcome on
    stdout (a JSON line with --json), the rest on stderr."""
    stopped: list[int] = []
    closed: list[BrokenPipeError] = []
    wake = threading.Event()

    def handler(signum, frame):
        stopped.append(signum)
        wake.set()

    def on_change(change) -> None:
        if change.kind == "imported" and not args.quiet:  # a note that became binary or too large leaves the index
            print_warnings((change.report or {}).get("warnings", []))
        line, is_result = watch_line(change, args.json)
        if is_result:
            try:
                print(line, flush=True)
            except BrokenPipeError as exc:  # the reader went away (`| head -1`): stop, not a failed import
                closed.append(exc)
                wake.set()
        elif not args.quiet:
            to_stderr(line)

    previous = {signum: signal.signal(signum, handler) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        watcher = service.watch(on_change, vault=getattr(args, "watch_vault", None) or args.vault,
                                force_polling=True if args.polling else None)
        try:
            while not wake.wait(1.0):
                if watcher.ended.is_set():  # the watch gave up (its `failed` line said why): nothing is seen
                    return EXIT_FAILED
        finally:
            watcher.stop()
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)
    if closed and not stopped:
        raise closed[0]  # main() ends quietly, as for any command piped into head
    return EXIT_INTERRUPTED if stopped and stopped[0] == signal.SIGINT else EXIT_OK
