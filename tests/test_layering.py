"""The layer table (README "Architecture"): imports only point down. Read from every module's
AST, lazy imports inside functions included, so a shortcut cannot hide in a function body.
The headless core never pulls in Textual or llama.cpp (checked in a fresh interpreter).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "mindtui"

# Bottom to top. A unit is `mindtui.<first name>`; a unit may import units of lower layers only
# (never one beside it in its own layer, except the one-file modules of the configuration
# layer), front ends only the service, the configuration layer and each other.
LAYERS = [
    ("configuration", {"mindtui", "mindtui.config", "mindtui.locations", "mindtui.errors", "mindtui.audience",
                       "mindtui.progress", "mindtui.lazy_import"}),
    ("text analysis", {"mindtui.text"}),
    ("store", {"mindtui.store"}),
    ("vault and models", {"mindtui.vault", "mindtui.models"}),
    ("search and graph", {"mindtui.search", "mindtui.graph", "mindtui.curation"}),
    ("knowledge", {"mindtui.knowledge"}),
    ("jobs", {"mindtui.jobs"}),
    ("evaluation", {"mindtui.evaluation"}),
    ("service", {"mindtui.service"}),
    ("front ends", {"mindtui.cli", "mindtui.cli_queue", "mindtui.cli_text", "mindtui.cli_watch", "mindtui.console", "mindtui.__main__", "mindtui.launcher",
                    "mindtui.tui",
                    "mindtui.mcp"}),
]
LAYER_OF = {unit: number for number, (_name, units) in enumerate(LAYERS) for unit in units}
FRONT_ENDS = len(LAYERS) - 1
FOREIGN = {"textual": {"mindtui.tui"}, "llama_cpp": {"mindtui.models"}, "mcp": {"mindtui.mcp"},
           "mcp_types": {"mindtui.mcp"}}  # who may import these


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def unit_of(module: str) -> str:
    return ".".join(module.split(".")[:2])


def imports_of(path: Path, package: Path = PACKAGE) -> list[tuple[int, str]]:
    """(line, imported module) for every import statement, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = module_name(path, package)
    parent = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = parent.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            found.append((node.lineno, base))
            if base == "mindtui":  # `from mindtui import config` imports the unit mindtui.config
                found.extend((node.lineno, f"mindtui.{alias.name}") for alias in node.names
                             if (package / alias.name).is_dir() or (package / f"{alias.name}.py").exists())
    return found


def violations(package: Path = PACKAGE) -> list[str]:
    found = []
    for path in sorted(p for p in package.rglob("*.py") if "__pycache__" not in p.parts):
        where = path.relative_to(package.parent)
        source = unit_of(module_name(path, package))
        assert source in LAYER_OF, f"{where}: unit {source} is not in the layer table; add it to README and here"
        for line, target in imports_of(path, package):
            top = target.split(".")[0]
            if top in FOREIGN and source not in FOREIGN[top]:
                found.append(f"{where}:{line}: {source} imports {target}")
            unit = unit_of(target)
            if top != "mindtui" or unit in (source, "mindtui"):
                continue
            assert unit in LAYER_OF, f"{where}:{line}: imports {target}, whose unit is not in the layer table"
            mine, theirs = LAYER_OF[source], LAYER_OF[unit]
            if mine == FRONT_ENDS:
                allowed = theirs in (0, LAYER_OF["mindtui.service"], FRONT_ENDS)
            else:  # the configuration layer is a handful of one-file modules that may use each other
                allowed = theirs < mine or mine == theirs == 0
            if not allowed:
                found.append(f"{where}:{line}: {source} ({LAYERS[mine][0]}) imports {target} ({LAYERS[theirs][0]})")
    return found


def test_imports_only_point_down_the_layer_table():
    assert violations() == []


@pytest.mark.parametrize("planted, expected", [
    ("graph/planted.py", "mindtui.graph (search and graph) imports mindtui.search.engine (search and graph)"),
    ("store/planted.py", "mindtui.store (store) imports mindtui.search.engine (search and graph)"),
    ("cli.py", "mindtui.cli (front ends) imports mindtui.search.engine (search and graph)"),
    ("vault/planted.py", "mindtui.vault imports llama_cpp"),
])
def test_the_checker_catches_an_arrow_up_or_sideways(tmp_path, planted, expected):
    """The checker can fail: a copy of the package with one import planted inside a function."""
    import shutil

    copy = tmp_path / "mindtui"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / planted
    bad = "import llama_cpp" if "llama_cpp" in expected else "from mindtui.search.engine import SearchEngine"
    existing = target.read_text(encoding="utf-8") if target.exists() else ""
    target.write_text(existing + f"\n\ndef _planted():\n    {bad}\n", encoding="utf-8")
    assert violations(PACKAGE) == []
    assert [v for v in violations(copy) if expected in v]


def test_front_ends_import_only_the_service_and_the_configuration():
    targets = {target for name in ("cli.py", "cli_queue.py", "cli_watch.py") for _, target in imports_of(PACKAGE / name)
               if target.startswith("mindtui.")}
    # mindtui.tui only inside the `tui` command (test_core_imports_neither_textual_nor_llama_cpp
    # imports mindtui.cli and finds no Textual).
    assert {unit_of(t) for t in targets} <= {"mindtui.config", "mindtui.service", "mindtui.console", "mindtui.cli_text",
                                            "mindtui.cli_queue", "mindtui.cli_watch",
                                            "mindtui.tui", "mindtui.mcp"}
    tui = PACKAGE / "tui"
    for path in tui.glob("*.py"):
        units = {unit_of(t) for _, t in imports_of(path) if t.startswith("mindtui.")}
        assert units <= {"mindtui.config", "mindtui.errors", "mindtui.service", "mindtui.tui"}, path.name


CORE = ["mindtui.store", "mindtui.vault", "mindtui.graph", "mindtui.curation.actions", "mindtui.jobs", "mindtui.cli", "mindtui.service",
        "mindtui.service.core",
        "mindtui.vault.importer", "mindtui.jobs.runner", "mindtui.models", "mindtui.models.holder", "mindtui.config"]


def test_core_imports_neither_textual_nor_llama_cpp():
    code = (
        "import importlib, json, sys\n"
        f"for name in {CORE!r}: importlib.import_module(name)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'llama_cpp', 'mcp'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == []


def test_nothing_opens_a_database_at_import_time(tmp_path):
    code = ("import mindtui.cli, mindtui.service, mindtui.vault.importer, mindtui.jobs.runner; import os;"
            " print(os.listdir('.'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          check=True)
    assert done.stdout.strip() == "[]"
