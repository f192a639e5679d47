"""A vault of hand-made nasty files (tests/fixtures/nasty_vault) imports in one run, every other note intact.

Each file's name says what it tests:

Frontmatter YAML cannot build or keep
- yaml-impossible-date.md: `created: 2023-02-30` (kept as text, the other keys count)
- yaml-impossible-timestamp.md: `updated: 2023-13-01 25:61:00`
- yaml-year-zero.md: `created: 0000-01-01`
- yaml-list-contains-itself.md: `a: &a [*a]`
- yaml-mapping-contains-itself.md: `a: &a {b: *a}` beside `private: true` (still private)
- yaml-huge-integer.md: an id of 5,000 digits (beyond Python's int conversion limit)
- yaml-nested-500-levels.md: flow lists 500 deep
- yaml-nested-1500-block-levels.md: block lists 1,500 deep (beyond libyaml's limit)
- yaml-huge-frontmatter.md: 20,000 keys (~740 KB) and a link in a value
- yaml-frontmatter-is-a-list.md, yaml-frontmatter-is-a-scalar.md: not a mapping
- yaml-tabs-for-indentation.md: a tab where YAML wants spaces
- yaml-unclosed-frontmatter.md: an opening `---` that never closes (body, no frontmatter)
- yaml-malformed-flow.md: `title: [unclosed`
- yaml-unhashable-key.md: a list as a key
- yaml-python-object-tag.md: `!!python/object/apply:os.system` (never run)
- yaml-bad-base64.md: `!!binary` that is not base64
- yaml-nan-and-infinity.md: `retriever_weight: .inf`, `.nan`, `-.inf`
- yaml-undefined-alias.md: `*nowhere`
- yaml-duplicate-keys.md: the same key twice (the last one wins, as in YAML)
- yaml-private-flag-in-broken-frontmatter.md: `private: true` in malformed YAML (still private)
- yaml-surrogate-escape.md: `"\\ud800"`
Bytes and line endings
- bom-utf8.md, bom-before-frontmatter.md: a byte order mark
- crlf-line-endings.md, lone-cr-line-endings.md, mixed-line-endings.md
- nul-bytes-after-8-kib.md: text with NUL bytes past the binary sniff (imported)
- nul-bytes-at-start-binary.md, utf16-encoded.md: binary (left out, with a warning)
- invalid-utf8-latin1.md, invalid-utf8-in-frontmatter.md, invalid-utf8-surrogate-bytes.md
- zero-bytes.md, only-whitespace.md: empty
Markdown structure
- unbalanced-code-fence.md: a fence never closed (the rest of the note is code)
- unclosed-obsidian-comment.md: `%%` never closed; unclosed-html-comment.md: `<!--` never closed
- unbalanced-backticks.md: a lone backtick among list items
- deeply-nested-lists.md: 300 levels; deeply-nested-quotes.md: 1,000 `>`
- ten-thousand-links.md: 6,000 links; one-mb-single-line.md: a 1 MB line with 2,000 links
- long-line-of-unclosed-markdown-links.md: 64 KB of `[a](` on one line; long-word-of-hashes.md: 256 KB of `#`
- long-heading.md: a heading of 2,000 words; headings-only.md: empty headings
- edge-callout-never-ends.md: an `[!edge]` callout of 200 lines
- links-that-go-nowhere.md: `[[]]`, `[[#]]`, `[[|]]`, `[[../../../etc/passwd]]`, `[y](<>)`, `[z](%zz)`, ...
Names
- Café décomposé.md (NFD), 🧠 emoji name.md, a right-to-left override, a zero-width space,
  name with [brackets] #hash ^caret.md, UPPER.MD, folder-named-like-a-note.md/inside.md
The notes that must stay intact
- good/Anchor.md, good/Second.md
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import dump_database, run_import
from mindtui.store import notes as note_store
from mindtui.store import open_database

CORPUS = Path(__file__).parent / "fixtures" / "nasty_vault"
GOOD = ("good/Anchor.md", "good/Second.md")
BINARY = {"nul-bytes-at-start-binary.md", "utf16-encoded.md"}
WARNINGS = {
    "yaml-impossible-date.md": "frontmatter line 2: '2023-02-30' is not a real date",
    "yaml-impossible-timestamp.md": "'2023-13-01 25:61:00' is not a real date",
    "yaml-year-zero.md": "'0000-01-01' is not a real date (year 0 is out of range)",
    "yaml-list-contains-itself.md": "a value contains itself",
    "yaml-mapping-contains-itself.md": "a value contains itself",
    "yaml-huge-integer.md": "is not a usable number",
    "yaml-nested-500-levels.md": "nested deeper than 64 levels",
    "yaml-nested-1500-block-levels.md": "exceeded maximum nesting depth",
    "yaml-frontmatter-is-a-list.md": "frontmatter is a list, not a mapping",
    "yaml-frontmatter-is-a-scalar.md": "frontmatter is a str, not a mapping",
    "yaml-tabs-for-indentation.md": "malformed YAML frontmatter (line 3)",
    "yaml-malformed-flow.md": "malformed YAML frontmatter",
    "yaml-unhashable-key.md": "found unhashable key",
    "yaml-python-object-tag.md": "could not determine a constructor",
    "yaml-bad-base64.md": "failed to decode base64",
    "yaml-nan-and-infinity.md": "retriever_weight 'inf' is not a number",
    "yaml-undefined-alias.md": "found undefined alias",
    "yaml-private-flag-in-broken-frontmatter.md": "malformed YAML frontmatter",
    "yaml-surrogate-escape.md": "malformed YAML frontmatter",
    "nul-bytes-at-start-binary.md": "binary content",
    "utf16-encoded.md": "binary content",
    "invalid-utf8-latin1.md": "invalid UTF-8 at byte 4",
    "invalid-utf8-in-frontmatter.md": "invalid UTF-8 at byte 14",
    "invalid-utf8-surrogate-bytes.md": "invalid UTF-8 at byte 12",
    "zero-bytes.md": "empty file",
    "only-whitespace.md": "empty file",
}


def markdown_files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and p.suffix.lower() == ".md"}


@pytest.fixture
def nasty_vault(tmp_path) -> Path:
    root = tmp_path / "nasty"
    shutil.copytree(CORPUS, root)
    return root


def good_notes(db_path) -> dict[str, tuple]:
    """The good notes as the store holds them: facts, chunks, references (links as target and kind)."""
    conn = open_database(db_path, migrate=False)
    try:
        out = {}
        for path in GOOD:
            (note_id,) = conn.execute("SELECT note_id FROM notes WHERE path = ?", (path,)).fetchone()
            note = note_store.load_note(conn, note_id)
            chunks = [(c.heading_path, c.text, c.token_count) for c in note_store.note_chunks(conn, note_id)]
            links = [(link.target_raw, link.relation, link.line) for link in note_store.load_links(conn, note_id)[note_id]]
            out[path] = (note.title, note.tags, note.aliases, note.frontmatter, note.word_count, note.warnings,
                         note.private, chunks, links)
        return out
    finally:
        conn.close()


def test_the_corpus_holds_at_least_30_nasty_files():
    files = markdown_files(CORPUS)
    assert len(files - set(GOOD)) >= 30
    assert set(WARNINGS) <= files and BINARY <= set(WARNINGS)


def test_the_nasty_vault_imports_in_one_run_with_every_other_note_intact(nasty_vault, tmp_path, db_path):
    report = run_import(db_path, nasty_vault)
    why = {w.path: w.reason for w in report.warnings}
    for path, reason in WARNINGS.items():
        assert reason in why.get(path, ""), (path, why.get(path))
    assert set(why) == set(WARNINGS)  # nothing else needed a word
    files = markdown_files(nasty_vault)
    conn = open_database(db_path, migrate=False)
    try:
        stored = {path: private for path, private in conn.execute("SELECT path, private FROM notes")}
        into_good = {target for (target,) in conn.execute(
            "SELECT DISTINCT s.path FROM note_links l JOIN notes s ON s.note_id = l.note_id"
            " JOIN notes t ON t.note_id = l.resolved_note_id WHERE t.path = 'good/Anchor.md'")}
        hidden = {target for (target,) in conn.execute(
            "SELECT target_raw FROM note_links WHERE target_raw IN ('InsideFence', 'InsideComment', 'NotALink')")}
    finally:
        conn.close()
    assert set(stored) == files - BINARY and report.files_skipped == len(BINARY)
    assert {p for p, private in stored.items() if private} == {"yaml-mapping-contains-itself.md",
                                                               "yaml-private-flag-in-broken-frontmatter.md"}
    # Notes that link [[Anchor]] reach it, whatever else is wrong with them (a checkout may store the
    # NFD name composed: it is matched by its start).
    assert {"yaml-impossible-date.md", "yaml-list-contains-itself.md", "yaml-huge-frontmatter.md",
            "invalid-utf8-latin1.md", "nul-bytes-after-8-kib.md", "crlf-line-endings.md", "lone-cr-line-endings.md",
            "one-mb-single-line.md", "ten-thousand-links.md", "deeply-nested-quotes.md", "🧠 emoji name.md",
            "folder-named-like-a-note.md/inside.md", "good/Second.md"} <= into_good
    assert any(p.startswith("Caf") for p in into_good)
    assert hidden == set()  # code and comments hold no links

    alone = tmp_path / "alone"
    for path in GOOD:
        (alone / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(nasty_vault / path, alone / path)
    (alone / "yaml-impossible-date.md").write_bytes((nasty_vault / "yaml-impossible-date.md").read_bytes())
    run_import(tmp_path / "alone.db", alone)
    assert good_notes(db_path) == good_notes(tmp_path / "alone.db")


def test_a_second_run_over_the_nasty_vault_changes_nothing(nasty_vault, db_path):
    run_import(db_path, nasty_vault)
    before = dump_database(db_path)
    report = run_import(db_path, nasty_vault)
    assert (report.notes_added, report.notes_changed, report.notes_deleted) == (0, 0, 0)
    assert report.notes_unchanged == len(markdown_files(nasty_vault) - BINARY)
    assert dump_database(db_path) == before
