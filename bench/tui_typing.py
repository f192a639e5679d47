"""Typing at 50 ms a key without waiting for results: from each query's last key to its full-text
results on screen (the searches of the keys before it must not hold it up).

    .venv/bin/python bench/tui_typing.py DB      # e.g. the 1M-chunk database of bench/scale_bench.py

Prints the milliseconds per query and their median (0: the answer was on screen within the last
key's 50 ms). Compare two checkouts on the same database one after the other, alternating: the
first run warms the page cache for the second.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from tui_daily import KEY_GAP_S, press  # noqa: E402

from mindtui.audience import Audience  # noqa: E402
from mindtui.config import load_settings  # noqa: E402
from mindtui.service import Service  # noqa: E402

QUERIES = ["obsidian plugin settings", "daily notes template", "github sync", "dataview query", "graph view colors",
           "calendar plugin", "kanban board", "excalidraw drawing", "spaced repetition", "zotero citations"]


async def last_key_to_results(db: Path) -> list[float]:
    from mindtui.tui.app import make_app

    settings = load_settings().with_overrides(db=str(db))
    service = Service(settings, audience=Audience.OWNER)
    app = make_app(settings, service=service, load_model=False, poll_status=False)
    out = []
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        for query in QUERIES:
            await pilot.press("ctrl+u")
            await asyncio.sleep(0.5)
            for char in query:
                press(app, "space" if char == " " else char, char)
                await asyncio.sleep(KEY_GAP_S)
            want = screen.generation
            started = time.perf_counter()
            while screen.shown is None or screen.shown[0] != want:
                await asyncio.sleep(0.001)
            out.append(time.perf_counter() - started)
            await asyncio.sleep(1.0)  # the debounced hybrid search ends before the next query
    service.close()
    return out


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    times = asyncio.run(last_key_to_results(Path(sys.argv[1])))
    print("last key -> full-text results, ms:", [round(t * 1000) for t in times],
          f"median {statistics.median(times) * 1000:.0f}, max {max(times) * 1000:.0f}")
    print(f"rerun: .venv/bin/python bench/tui_typing.py {sys.argv[1]}")


if __name__ == "__main__":
    main()
