"""A link that only hidden notes make ambiguous gives its line to the anchor row of its one
candidate agents may read, as it would resolve without them (store.anchors): so an agent's
full-text ranking of that note is the one of the vault without the hidden notes, score for score.

The rows are kept incrementally; every change that moves the "sole readable candidate" (a
candidate's privacy toggled, a namesake added, deleted or renamed, the linking note edited) must
refresh the right rows: after each step the store equals one relinking and refreshing everything,
its anchor rows those of a clean import, and an agent's search that of the vault without the
hidden notes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import Vault, dump_database, run_import
from test_relink_changed import anchor_rows

from mindtui.audience import Audience
from mindtui.config import load_settings
from mindtui.models.holder import ModelHolder
from mindtui.service import SearchOptions, Service
from mindtui.store import open_database
from mindtui.store.meta import set_meta
from mindtui.vault.relink import RELINK_PENDING_KEY

WORD = "kwlinie"  # in A's linking line and in Fuell's text, nowhere else
HIDDEN_FLAGS = ("private: true", "ai_processing: none")


def note(title: str, body: str, flag: str | None = None) -> str:
    return (f"---\n{flag}\n---\n" if flag else "") + f"# {title}\n\n{body}\n"


def same(body: str, flag: str | None = None) -> str:
    return note("Same", body, flag)


def start() -> dict[str, str]:
    """A links [[Same]]: folder1/Same readable, folder2/Same private. Eigen/Ich links [[Ich]],
    whose other bearer is private: to an agent a link to itself (no anchor row)."""
    return {"A.md": note("A", f"Verweis {WORD} auf [[Same]].\n\nSonst nichts."),
            "folder1/Same.md": same("Die erste."),
            "folder2/Same.md": same("Die zweite.", "private: true"),
            "Eigen/Ich.md": note("Ich", f"Ich {WORD} selbst, {WORD} hier: [[Ich]]."),
            "Privat/Ich.md": note("Ich", "Geheim.", "private: true"),
            "Fuell.md": note("Fuell", f"Ein {WORD} und viel anderes Wetter."),
            **{f"Andere/N{n}.md": note(f"N{n}", f"Nur Text {n}.") for n in range(4)}}


def steps() -> list[tuple[str, dict, str | None]]:
    """(what, the files it writes (None: deletes), the note whose anchor row gets A's line)."""
    return [
        ("the start", {}, "folder1/Same.md"),
        ("folder2/Same readable", {"folder2/Same.md": same("Die zweite.")}, None),
        ("folder2/Same ai_processing: none", {"folder2/Same.md": same("Die zweite.", "ai_processing: none")},
         "folder1/Same.md"),
        ("folder1/Same private too", {"folder1/Same.md": same("Die erste.", "private: true")}, None),
        ("folder1/Same readable, folder2/Same private", {"folder1/Same.md": same("Die erste, wieder."),
                                                         "folder2/Same.md": same("Die zweite.", "private: true")},
         "folder1/Same.md"),
        ("folder1/Same private, folder2/Same readable", {"folder1/Same.md": same("Die erste.", "private: true"),
                                                         "folder2/Same.md": same("Die zweite, offen.")},
         "folder2/Same.md"),
        ("a third, hidden Same", {"folder3/Same.md": same("Die dritte.", "ai_processing: none")}, "folder2/Same.md"),
        ("the readable one deleted", {"folder2/Same.md": None}, None),
        ("folder1/Same readable again", {"folder1/Same.md": same("Die erste, zurueck.")}, "folder1/Same.md"),
        ("folder1/Same renamed", {"folder1/Same.md": None, "Neu/Same.md": same("Die erste, zurueck.")},
         "Neu/Same.md"),
        ("the hidden one renamed away: resolved", {"folder3/Same.md": None,
                                                   "folder3/Anders.md": same("Die dritte.", "ai_processing: none")},
         "Neu/Same.md"),
        ("a hidden Same back", {"folder2/Same.md": same("Die zweite.", "private: true")}, "Neu/Same.md"),
        ("A's line edited", {"A.md": note("A", f"Nun {WORD} anders zu [[Same]] hin.\n\nSonst nichts.")},
         "Neu/Same.md"),
        ("A private", {"A.md": note("A", f"Nun {WORD} anders zu [[Same]] hin.", "private: true")}, None),
        ("A readable, without the link", {"A.md": note("A", f"Nun {WORD} ohne Verweis.")}, None),
        ("A links again", {"A.md": note("A", f"Wieder {WORD} auf [[Same]].")}, "Neu/Same.md"),
        ("a second linking note", {"B.md": note("B", f"Auch {WORD} bei [[Same]].")}, "Neu/Same.md"),
        ("the second linking note deleted", {"B.md": None}, "Neu/Same.md"),
        ("the hidden one renamed back", {"folder3/Anders.md": None,
                                         "folder3/Same.md": same("Die dritte.", "ai_processing: none")},
         "Neu/Same.md"),
        ("folder2/Same readable: two readable, one hidden", {"folder2/Same.md": same("Die zweite.")}, None),
        ("a readable one renamed away", {"folder2/Same.md": None, "folder2/Zwei.md": same("Die zweite.")},
         "Neu/Same.md"),
        ("a readable one back", {"folder2/Same.md": same("Die andere zweite.")}, None),
        ("a readable one deleted", {"folder2/Same.md": None}, "Neu/Same.md"),
    ]


def hidden(text: str) -> bool:
    front = text.split("\n---\n", 1)[0] if text.startswith("---\n") else ""
    return any(flag in front.splitlines() for flag in HIDDEN_FLAGS)


def sync(vault: Vault, files: dict[str, str]) -> None:
    for path in sorted(p.relative_to(vault.root).as_posix() for p in vault.root.rglob("*.md")):
        if path not in files:
            vault.remove(path)
    for path, text in files.items():
        on_disk = vault.root / path
        if not on_disk.exists() or on_disk.read_text(encoding="utf-8") != text:
            vault.write(path, text, dedent=False)


def clean_import(root: Path, files: dict[str, str]) -> Path:
    if root.exists():
        shutil.rmtree(root)
    vault = Vault(root / "vault")
    sync(vault, files)
    db = root / "mindtui.db"
    run_import(db, vault.root)
    return db


def agent_search(db: Path) -> list[tuple]:
    settings = load_settings().with_values({"db": str(db)})
    with Service(settings, audience=Audience.AGENT, models=ModelHolder()) as agent:
        found = agent.search(WORD, SearchOptions(mode="fts", log=False)).results
    return [(r.path, r.score, r.explain.get("fts")) for r in found]


def imported_steps(tmp_path: Path, files: dict[str, str], steps: list[tuple[str, dict, object]]):
    """Each step's change written to one vault and imported into one store, which then equals
    the same store brought forward by an import relinking every note (and its anchor rows those
    of a clean import). Yields (what, the files now, the store, the step's expectation)."""
    vault = Vault(tmp_path / "vault")
    db, everything = tmp_path / "mindtui.db", tmp_path / "everything.db"
    for what, change, expected in steps:
        for path, text in change.items():
            if text is None:
                del files[path]
            else:
                files[path] = text
        before = db.exists()
        if before:  # the same store, brought forward below by an import relinking every note
            shutil.copy(db, everything)
        sync(vault, files)
        run_import(db, vault.root)
        if before:
            conn = open_database(everything)
            try:
                set_meta(conn, RELINK_PENDING_KEY, "1")
            finally:
                conn.close()
            run_import(everything, vault.root)
            assert dump_database(db) == dump_database(everything), what
            assert anchor_rows(db) == anchor_rows(everything), what
        assert anchor_rows(db) == anchor_rows(clean_import(tmp_path / "clean", files)), what
        yield what, files, db, expected


def test_anchor_rows_give_an_ambiguous_links_line_to_its_sole_readable_candidate_through_every_change(tmp_path):
    for what, files, db, anchored in imported_steps(tmp_path, start(), steps()):
        without = clean_import(tmp_path / "without", {p: t for p, t in files.items() if not hidden(t)})
        seen = agent_search(db)
        assert seen == agent_search(without), what
        # No Same holds the word: one is found by its anchor row alone.
        assert [path for path, _, _ in seen if path.endswith("/Same.md")] == ([anchored] if anchored else []), what
        assert "Fuell.md" in [path for path, _, _ in seen], what
