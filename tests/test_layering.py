"""The headless core never pulls in Textual or llama.cpp (checked in a fresh interpreter)."""

from __future__ import annotations

import json
import subprocess
import sys

CORE = ["mindtui.store", "mindtui.vault", "mindtui.graph", "mindtui.jobs", "mindtui.cli",
        "mindtui.vault.importer", "mindtui.jobs.runner", "mindtui.models", "mindtui.config"]


def test_core_imports_neither_textual_nor_llama_cpp():
    code = (
        "import importlib, json, sys\n"
        f"for name in {CORE!r}: importlib.import_module(name)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'llama_cpp'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == []


def test_nothing_opens_a_database_at_import_time(tmp_path):
    code = "import mindtui.cli, mindtui.vault.importer, mindtui.jobs.runner; import os; print(os.listdir('.'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          check=True)
    assert done.stdout.strip() == "[]"
