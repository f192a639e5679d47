"""bench/scale_bench.py's command line (the measurements themselves are the bench's, not a test's)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import scale_bench  # noqa: E402


def test_help_names_every_item_and_the_quick_mode():
    done = subprocess.run([sys.executable, str(BENCH / "scale_bench.py"), "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == ""
    for words in ("--quick", "--real-db", "--only", "item 2", "item 4", "item 5", "item 6", "item 7"):
        assert words in done.stdout


def test_sizes_full_quick_and_overridden(tmp_path):
    real = tmp_path / "real.db"
    real.write_bytes(b"")
    full = scale_bench.parse_args(["--real-db", str(real), "--source", str(tmp_path)])
    assert (full.notes, full.chunks, full.vectors, full.queries, full.typed) == (100_000, 1_000_000, 1_000_000, 200, 300)
    quick = scale_bench.parse_args(["--real-db", str(real), "--source", str(tmp_path), "--quick", "--notes", "500"])
    assert (quick.notes, quick.vectors, quick.only) == (500, 100_000, scale_bench.ITEMS)
    assert quick.work == Path("/tmp/mindtui-scale-quick")
    assert scale_bench.parse_args(["--real-db", str(real), "--source", str(tmp_path), "--only", "2, 4"]).only == ("2", "4")


@pytest.mark.parametrize("argv, message", [
    (["--only", "3"], "no item 3"),
    (["--notes", "-1"], "--notes must be >= 0"),
    (["--real-db", "/nonexistent/real.db"], "no file /nonexistent/real.db"),
])
def test_bad_arguments_are_usage_errors(tmp_path, capsys, argv, message):
    real = tmp_path / "real.db"
    real.write_bytes(b"")
    with pytest.raises(SystemExit) as stop:
        scale_bench.parse_args(["--real-db", str(real), "--source", str(tmp_path), *argv])
    assert stop.value.code == 2 and message in capsys.readouterr().err
