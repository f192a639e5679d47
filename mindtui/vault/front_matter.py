"""A note's YAML frontmatter as a JSON-safe mapping; whatever YAML makes of it is a warning, never a crash.

A value YAML types but cannot build (`created: 2023-02-30`, an integer of 5,000 digits) is kept as
the text written, with a warning naming it: the rest of the frontmatter stays usable. Frontmatter
that cannot be used as a whole (malformed YAML, a list or a scalar instead of a mapping, a value
that contains itself through an alias, aliases that expand it past twice its text, nesting deeper
than MAX_DEPTH) is ignored with a warning; the note's body is imported as usual and its consent
flags are read from the lines (`flags.read_flags_from_lines`).
"""

from __future__ import annotations

import datetime
import math

import frontmatter
import yaml

from mindtui.vault.flags import RESTRICTIVE_VALUES

MAX_DEPTH = 64  # nesting levels kept; deeper frontmatter is ignored (no note needs more)

_HANDLER = frontmatter.YAMLHandler()
_BASE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Unusable(Exception):
    """Frontmatter YAML could read but mindtui cannot keep (self-containing, too deep)."""


class _Loader(_BASE_LOADER):  # type: ignore[misc, valid-type]
    """The safe loader, except that a scalar YAML types but cannot build stays the text written."""

    def __init__(self, stream: str) -> None:
        # The stream starts with the newline after the opening '---': its 0-based line L is the
        # file's (1-based) line L + 1, the number the warnings give.
        super().__init__(stream)
        self.notices: list[str] = []

    def _as_text(self, node, build, what: str):
        try:
            return build(self, node)
        except (ValueError, OverflowError) as exc:
            self.notices.append(f"frontmatter line {node.start_mark.line + 1}: {_short(node.value)!r} is not {what}"
                                f" ({exc}); kept as text")
            return str(node.value)

    def construct_document(self, node):
        data = super().construct_document(node)
        if isinstance(node, yaml.MappingNode) and isinstance(data, dict):
            keys = [key.value for key, _ in node.value if isinstance(key, yaml.ScalarNode)]
            for flag, restrictive in RESTRICTIVE_VALUES.items():
                if keys.count(flag) > 1:
                    data[flag] = restrictive
                    self.notices.append(f"frontmatter: {flag} is given {keys.count(flag)} times; "
                                        f"treated as {flag}: {str(restrictive).lower()}")
        return data

    def construct_timestamp(self, node):
        return self._as_text(node, yaml.constructor.SafeConstructor.construct_yaml_timestamp, "a real date")

    def construct_int(self, node):
        return self._as_text(node, yaml.constructor.SafeConstructor.construct_yaml_int, "a usable number")


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _Loader.construct_timestamp)
_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_int)


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


class _Budget:
    """How much the frontmatter may grow to: YAML aliases repeat what an anchor holds without
    writing it again, so nine lines of nine aliases each (the "billion laughs") stand for 9**9
    strings. Written-out frontmatter never grows past its own text: what YAML builds is allowed
    twice that (a merge key `<<: *base` copies a mapping), plus room for small ones."""

    def __init__(self, text: str) -> None:
        self.left = 2 * len(text) + 10_000

    def spend(self, size: int) -> None:
        self.left -= size
        if self.left < 0:
            raise _Unusable("YAML aliases expand it to more than twice its own text")


def _json_safe(value, budget: _Budget, depth: int = 0, path: tuple[int, ...] = ()):
    """The value with str keys and JSON types only. `path` holds the ids of the containers above
    (a YAML alias can put a list inside itself)."""
    budget.spend(len(value) + 1 if isinstance(value, str) else 1)
    if isinstance(value, (dict, list, tuple, set)):
        if id(value) in path:
            raise _Unusable("a value contains itself (a YAML alias inside its own anchor)")
        if depth >= MAX_DEPTH:
            raise _Unusable(f"it is nested deeper than {MAX_DEPTH} levels")
        inner = path + (id(value),)
        if isinstance(value, dict):
            return {_key(k, budget): _json_safe(v, budget, depth + 1, inner) for k, v in value.items()}
        return [_json_safe(v, budget, depth + 1, inner) for v in value]
    if isinstance(value, str):
        return value if value.isascii() else value.encode("utf-8", "replace").decode("utf-8")  # lone surrogates
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # JSON has no NaN or infinity
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if value is None or isinstance(value, (int, float, bool)):
        return value
    return str(value)


def _key(key, budget: _Budget) -> str:
    return _json_safe(key if isinstance(key, str) else str(key), budget)


def _load(fm_text: str) -> tuple[object, list[str]]:
    """(what YAML makes of the text, the values it kept as text). Raises on unusable YAML."""
    loader = _Loader(fm_text)
    try:
        return loader.get_single_data(), loader.notices
    finally:
        loader.dispose()


def _reason(exc: BaseException) -> str:
    """Why YAML could not read the frontmatter, as one line a person can act on."""
    if isinstance(exc, yaml.YAMLError):
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return f"malformed YAML frontmatter{where}: {problem}"
    if isinstance(exc, RecursionError):
        return "YAML frontmatter nested too deeply to read"
    return f"YAML frontmatter cannot be read ({type(exc).__name__}: {_short(str(exc), 200)})"


def split_frontmatter(text: str) -> tuple[dict, str, int, list[str], list[str]]:
    """-> (metadata, body, body_start_line, frontmatter lines, warnings). Bad YAML keeps the body.
    metadata is empty whenever the frontmatter could not be used (then a warning says why)."""
    if not _HANDLER.detect(text):
        return {}, text, 0, [], []
    try:
        fm_text, body = _HANDLER.split(text)
    except ValueError:  # an opening '---' with no closing one: a thematic break, not frontmatter
        return {}, text, 0, [], []
    start_line = text[: len(text) - len(body)].count("\n")
    fm_lines = fm_text.lstrip("\n").splitlines()  # fm_lines[0] is the file's line 2
    try:
        data, notices = _load(fm_text)
        if data is None:
            return {}, body, start_line, fm_lines, []
        if not isinstance(data, dict):
            return {}, body, start_line, fm_lines, [f"frontmatter is a {type(data).__name__}, not a mapping; ignored"]
        metadata = _json_safe(data, _Budget(fm_text))
    except _Unusable as exc:
        return {}, body, start_line, fm_lines, [f"YAML frontmatter cannot be kept: {exc}; frontmatter ignored"]
    # YAML is a large parser run on text from anywhere: whatever it raises is this note's problem
    # (a warning), never the import's. (MemoryError and KeyboardInterrupt are not Exceptions here.)
    except Exception as exc:
        return {}, body, start_line, fm_lines, [f"{_reason(exc)}; frontmatter ignored"]
    return metadata, body, start_line, fm_lines, notices
