"""Text written decomposed (NFD, as macOS names files and some Mac apps write text: 'U' + U+0308
for 'Ü') is searched as the composed text a keyboard types, and the other way round."""

from __future__ import annotations

import unicodedata

from tui_support import owner_service

from mindtui.service import SearchOptions

from conftest import run_import


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def test_decomposed_and_composed_text_find_each_other_and_highlight_whole_words(vault, db_path):
    vault.write(f"{nfd('Übung')}.md", f"# {nfd('Übungsblatt')}\n\n{nfd('Die Ärzte prüfen täglich.')}\n")
    vault.write("Getippt.md", "Große Käsesorten aus Österreich.\n")
    run_import(db_path, vault.root)
    with owner_service(db_path) as service:
        def found(query: str) -> list[str]:
            return [r.path for r in service.search(query, SearchOptions(mode="fts", limit=5, log=False)).results]

        assert found("Übung") == [f"{nfd('Übung')}.md"]  # the title, from the file name
        assert found("Ärzte prüfen") == [f"{nfd('Übung')}.md"]
        assert found(nfd("Käsesorten Österreich")) == ["Getippt.md"]
        hit, = service.search("prüfen", SearchOptions(mode="fts", limit=5, log=False)).results
        assert [hit.snippet[a:b] for a, b in hit.highlights] == [nfd("prüfen")]
