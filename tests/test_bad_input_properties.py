"""Generated frontmatter and bodies never make the parser or the importer raise.

Frontmatter: random YAML scalars (dates real and impossible, huge numbers, NaN, escapes, tags),
aliases and recursion, deep nesting, a list or a scalar instead of a mapping. Bodies: headings,
unbalanced fences, `%%` and `<!--` left open, deep quotes and lists, callouts, thousands of links,
lines of up to 1 MB. Bytes: a BOM, CRLF or lone CR, invalid UTF-8, NUL bytes past the first 8 KiB.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from mindtui.config import load_settings
from mindtui.store import open_database
from mindtui.vault.importer import VaultImporter
from mindtui.vault.markdown import BINARY_SNIFF_BYTES, NotMarkdownError
from mindtui.vault.note_builder import build_rows, parse_file
from mindtui.vault.resolve import NameIndex
from mindtui.vault.types import load_type_registry

MB = 1024 * 1024


def weighted(*choices):
    """One of the strategies, each `weight` times as likely (st.one_of merges repeated ones)."""
    return st.sampled_from([strategy for weight, strategy in choices for _ in range(weight)]).flatmap(lambda s: s)


chars = st.characters(blacklist_characters="\x00")  # NUL bytes are placed on purpose (note_bytes)

_digits = st.integers(0, 99).map(lambda n: f"{n:02d}")
dates = st.tuples(st.integers(0, 9999), _digits, _digits).map(lambda t: f"{t[0]:04d}-{t[1]}-{t[2]}")
timestamps = st.tuples(dates, _digits, _digits).map(lambda t: f"{t[0]} {t[1]}:{t[2]}:00")
odd_scalars = st.sampled_from([
    ".nan", "-.inf", "~", "null", "yes", "No", "on", "0x1F", "0o17", "1_000", "1e999", "!!binary zz",
    "!!python/object:os.system ls", "!!set {a, b}", "!!omap [a: 1]", "!!int x", "!!float x", "!!timestamp x",
    '"\\ud800"', '"\\0"', '"\\x00 \\t"', "'it''s'", "*nirgends", "&a", "[unclosed", "{a: ", "- a", ": :", "|",
    ">-", "\t\ttab", "%YAML 1.1", "---", "...", "#", "\"[[Ziel]]\"", "[[Ziel]]", "[\"[[A]]\", \"[[B|b]]\"]",
    "ünïcödé 🧠", "\u202eRTL", "\ufeff", "\x85", "\u2028",
])
yaml_scalars = weighted(
    (3, dates), (1, timestamps), (1, st.integers().map(str)), (1, st.integers(1, 6000).map(lambda n: "9" * n)),
    (1, st.floats(allow_nan=True).map(repr)), (3, st.text("abcäß 🧠-_", max_size=12)), (2, odd_scalars),
    (1, st.text(chars, max_size=30)),
)
keys = st.one_of(
    st.sampled_from(["title", "aliases", "alias", "tags", "tag", "id", "type", "private", "visibility",
                     "ai_processing", "retriever_weight", "chunk_profile", "related", "created", "? [a]", "2023-02-30",
                     "1", "~", "\"k\"", "a b", "ÄÖÜ"]),
    st.text("abcxyz_-", min_size=1, max_size=8),
)


def _nested(depth: int, value: str, flow: bool) -> str:
    return "[" * depth + value + "]" * depth if flow else "".join(f"\n{'  ' * (i + 1)}- " for i in range(depth)) + value


mapping_lines = st.lists(st.one_of(
    st.tuples(keys, yaml_scalars).map(lambda kv: f"{kv[0]}: {kv[1]}"),
    st.tuples(keys, st.lists(yaml_scalars, max_size=5)).map(lambda kv: f"{kv[0]}: [{', '.join(kv[1])}]"),
    st.tuples(keys, st.integers(1, 300), yaml_scalars, st.booleans()).map(
        lambda t: f"{t[0]}: {_nested(t[1], t[2], t[3])}"),
    st.sampled_from(["a: &a [*a]", "b: &b {c: *b}", "d: &d [1, [2, *d]]", "e: &e\n  - *e", "f: *a",
                     "<<: &m {x: 1}", "<<: *m", "g: &g x\nh: *g"]),
), min_size=1, max_size=12).map("\n".join)
frontmatter_texts = weighted(
    (6, mapping_lines),
    (1, st.lists(yaml_scalars, max_size=4).map(lambda items: "\n".join(f"- {i}" for i in items))),  # a list
    (1, yaml_scalars),  # a scalar
    (1, st.integers(1, 20_000).map(lambda n: "\n".join(f"k{i}: v{i}" for i in range(n)))),  # huge
)

targets = st.one_of(st.sampled_from(["Gut", "gut.md", "Ordner/Gut", "Fehlt", "Gut#Teil", "Gut|Titel", "#Teil",
                                     "^block", "", " ", "../..", "/abs", "Ä", "x.png", "a\\|b"]),
                    st.text(chars, max_size=12))
link = targets.flatmap(lambda t: st.sampled_from([f"[[{t}]]", f"![[{t}]]", f"[x]({t})", f"[x](<{t}>)", f"[[{t}"]))
fragments = st.one_of(
    link,
    st.sampled_from(["```", "~~~", "```python", "    code", "%%", "<!--", "-->", "`", "``", "#", "# H", "###### H",
                     "#tag", "#123", "> [!edge] related_to: [[Gut]]", "> [!note]", "rel: similar_to [[Gut]]",
                     "| a | b |", "|---|", "- [ ] x", "* ", "1. ", "---", "***", "$$", "\\", "*", "_", "<", "&amp;",
                     "[a](", "[", "]", "(", ")", "[^1]", "^block", "\t", "\u00a0", "\u200b", "\u0301", "🧠", "ß",
                     "中文", "\ufffd", " "]),
    st.text(chars, max_size=10),
)
plain_lines = st.lists(fragments, max_size=12).map(" ".join)
special_lines = st.one_of(
    st.integers(1, 600).map(lambda n: ">" * n + " [[Gut]]"),  # deep quotes
    st.integers(1, 200).map(lambda n: "\n".join("  " * i + "- [[Gut]]" for i in range(n))),  # deep lists
    st.integers(1, 5000).map(lambda n: " ".join(f"[[Gut{i}]]" for i in range(n))),  # thousands of links
)
long_lines = st.tuples(fragments.filter(bool), st.integers(1, MB)).map(
    lambda t: (t[0] * (t[1] // len(t[0]) + 1))[: t[1]])
# Long lines are rare (a few examples in a hundred) to keep the run short; the explicit examples hold 1 MB ones.
body_lines = weighted((40, plain_lines), (4, special_lines), (1, long_lines))
bodies = st.lists(body_lines, max_size=20).map("\n".join)


@st.composite
def note_bytes(draw) -> bytes:
    text = draw(bodies)
    if draw(st.sampled_from([True, True, True, False])):
        closing = draw(st.sampled_from(["---", "---", "---", "---  ", "...", ""]))  # "..." and "" leave it open
        text = f"---\n{draw(frontmatter_texts)}\n{closing}\n{text}"
    newline = draw(st.sampled_from(["\n", "\r\n", "\r", "mixed"]))
    if newline == "mixed":
        text = "\r\n".join(part.replace("\n", "\r") for part in text.split("\n", 3))
    elif newline != "\n":
        text = text.replace("\n", newline)
    data = (b"\xef\xbb\xbf" if draw(st.booleans()) else b"") + text.encode("utf-8", "surrogatepass")
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 3]))):  # invalid UTF-8 at random places
        junk = draw(st.sampled_from([b"\xff", b"\xc3(", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80"]))
        at = draw(st.integers(0, len(data)))
        data = data[:at] + junk + data[at:]
    nul = draw(st.sampled_from(["none"] * 8 + ["late", "early"]))
    if nul == "late":  # NUL bytes after the first 8 KiB: text, not a binary file
        data = data + b"x" * BINARY_SNIFF_BYTES + b"\x00[[Gut]]\x00"
    elif nul == "early":  # within them: a binary file
        data = data[:100] + b"\x00" + data[100:]
    return data


@pytest.fixture(scope="module")
def registry():
    return load_type_registry(load_settings().types_file)


def storable(value) -> None:
    """What the store writes: JSON without NaN, text that encodes as UTF-8 (no lone surrogates)."""
    json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=note_bytes())
def test_the_parser_never_raises(registry, data):
    names = NameIndex()
    names.add_note("g", "Ordner/Gut.md", ["Gut"])
    try:
        item = parse_file("Neu/gen.md", data, len(data), 0, registry)
    except NotMarkdownError:
        assert b"\x00" in data[:BINARY_SNIFF_BYTES]  # the one refusal: a binary file
        return
    rows = build_rows(item, "n", registry, names)
    storable(rows.note.frontmatter)
    for text in [rows.note.title, *rows.note.aliases, *rows.note.tags, *rows.note.warnings,
                 *(c.text for c in rows.chunks), *(l.target_raw for l in rows.links), *(l.evidence for l in rows.links)]:
        assert isinstance(text, str)
        text.encode("utf-8")


@pytest.fixture(scope="module")
def vault_and_store(tmp_path_factory, registry):
    root = tmp_path_factory.mktemp("property_vault")
    (root / "Ordner").mkdir()
    (root / "Ordner" / "Gut.md").write_text("---\naliases: [Gut]\ntags: [fest]\n---\n# Gut\n\nSiehe [[gen]].\n",
                                            encoding="utf-8")
    conn = open_database(root.parent / f"{root.name}.db")
    settings_ = load_settings()
    yield root, conn, settings_
    conn.close()


ONE_MB_LINE_OF_LINKS = ("# Lang\n" + "[[Gut]] [x](Gut.md) `code` %% " * (MB // 32)).encode("utf-8")
ONE_MB_WORD = b"---\ncreated: 2023-02-30\n---\n" + b"#" * MB
ODD_YAML = b"---\na: &a [*a]\nprivate: true\n---\n[[Gut]]\n"


@example(data=ONE_MB_LINE_OF_LINKS, second=ODD_YAML)
@example(data=ONE_MB_WORD, second=b"")
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])
@given(data=note_bytes(), second=note_bytes())
def test_the_importer_never_raises_and_keeps_every_other_note(vault_and_store, registry, data, second):
    root, conn, settings_ = vault_and_store
    (root / "gen.md").write_bytes(data)
    (root / "Ordner" / "gen2.md").write_bytes(second)
    report = VaultImporter(conn, root, registry, settings_, allow_mass_delete=True).run()
    notes = {path: (tags, warnings) for path, tags, warnings in
             conn.execute("SELECT path, tags, warnings FROM notes")}
    assert notes["Ordner/Gut.md"] == ('["fest"]', "[]")
    warned = {w.path for w in report.warnings}
    for path, content in (("gen.md", data), ("Ordner/gen2.md", second)):
        left_out = b"\x00" in content[:BINARY_SNIFF_BYTES] or len(content) > settings_.import_.max_file_bytes
        assert (path in notes) != left_out and (path in warned or not left_out)
    (resolved,) = conn.execute(
        "SELECT count(*) FROM note_links l JOIN notes s ON s.note_id = l.note_id JOIN notes t"
        " ON t.note_id = l.resolved_note_id WHERE s.path = 'Ordner/Gut.md' AND t.path = 'gen.md'").fetchone()
    assert resolved == ("gen.md" in notes)
