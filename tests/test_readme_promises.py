"""README's "What mindtui never does" names the tests that prove each promise: they must exist."""

from __future__ import annotations

import ast
import re

from conftest import REPO


def _section() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index("## What mindtui never does")
    return text[start:text.index("\n## ", start + 1)]


def _cited() -> list[tuple[str, str | None]]:
    """(file, test name or None) for every `tests/x.py[::name]` and following `::name` cell entry."""
    cited, current = [], None
    for token in re.findall(r"`(tests/[\w/]+\.py)?(?:::(\w+))?`", _section()):
        path, name = token
        current = path or current
        cited.append((current, name or None))
    return cited


def test_every_test_the_promises_cite_exists():
    cited = _cited()
    assert len(cited) >= 15
    for path, name in cited:
        source = REPO / path
        assert source.is_file(), path
        if name:
            names = {node.name for node in ast.walk(ast.parse(source.read_text(encoding="utf-8")))
                     if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
            assert name in names, f"{path}::{name}"
