"""Cut with an ellipsis, never glued or silently dropped: the headers and labels that must fit
their columns (the screens themselves are in test_tui_snapshots.py)."""

from __future__ import annotations

from types import SimpleNamespace

from mindtui.service import CURATION_KINDS
from mindtui.tui.curation_screen import counts_header
from mindtui.tui.note_screen import entry_label, one_per_note


def test_the_curation_header_names_every_kind_at_any_width_by_abbreviating():
    counts = {kind: n + 1 for n, kind in enumerate(CURATION_KINDS)}
    for width in (78, 118, 198):
        header = counts_header(counts, None, 0, width)
        assert len(header) <= width, (width, header)
        numbers = [int(word) for word in header.split() if word.isdigit()]
        assert sorted(numbers[1:]) == sorted(counts.values()), header  # every kind, none dropped
    assert "unresolved link 1" in counts_header(counts, None, 0, 400)  # full names when there is room
    total = sum(counts.values())  # every kind's cards
    assert counts_header(counts, "unresolved_entity", 2, 40) == f"showing unresolved entity: 2 of {total} open"
    assert counts_header(counts, "unresolved_entity", 2, 30) == f"showing entity: 2 of {total} open"


def entry(title, kind="related_to", note_id="n1", confidence=1.0):
    return SimpleNamespace(title=title, kind=kind, note_id=note_id, path=f"{title}.md", confidence=confidence)


def test_neighbour_titles_are_cut_with_an_ellipsis_and_listed_once_per_note():
    assert entry_label(entry("Projekt Zweites Gehirn"), 14) == "Projekt Zweit…"
    assert entry_label(entry("Projekt Zweites Gehirn", confidence=0.5), 20) == "Projekt Zwei… (0.50)"
    assert entry_label(entry("Kurz"), 14) == "Kurz"
    rows = one_per_note([entry("A", "inspired_by"), entry("B", note_id="n2"), entry("A", "supports")])
    assert [(e.title, kinds) for e, kinds in rows] == [("A", ["inspired_by", "supports"]), ("B", ["related_to"])]
