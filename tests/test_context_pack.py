"""context_pack: within its budget by the model's real token count, and built in time linear in its size."""

from __future__ import annotations

import pytest
from e5_tokens import real_token_count
from tui_support import owner_service

from mindtui.service import context
from mindtui.service.context import dumps, tokens_of

from conftest import run_import

WORDS = "Wissen Notiz Verknüpfung Suche Vektor Graph Projekt Quelle Lernen Gedächtnis Straße 2026 O'Brien".split()


@pytest.fixture
def long_notes(vault, db_path):
    """Three long notes that link each other: a big budget holds hundreds of their chunks."""
    for n in range(3):
        paragraphs = [" ".join(WORDS[(p + i) % len(WORDS)] for i in range(60)) + f" ({n}.{p}) \"zitiert\" \\ Ende."
                      for p in range(400)]
        links = " ".join(f"[[Lang {m}]]" for m in range(3) if m != n)
        vault.write(f"Lang {n}.md", f"# Lang {n}\n\nSiehe {links}.\n\n" + "\n\n".join(paragraphs) + "\n")
    run_import(db_path, vault.root)
    with owner_service(db_path) as service:
        yield service


@pytest.mark.parametrize("budget", [200, 450, 1000, 3000, 12_000])
def test_the_pack_keeps_to_the_budget_by_the_real_token_count(long_notes, budget):
    """The estimator (mindtui.text.tokens) is what the pack is cut with; what an agent's model reads
    is the real tokenizer's count, checked here independently (SentencePiece over e5's vocabulary)."""
    pack = long_notes.context_pack(query="Wissen Verknüpfung", budget_tokens=budget)
    assert pack["used_tokens"] == tokens_of(pack) <= budget
    assert real_token_count(dumps(pack)) <= budget
    if budget >= 1000:
        assert pack["notes"][0].get("text")  # a pack that says nothing would keep to any budget


def test_the_running_count_is_the_serialised_packs_count(long_notes, monkeypatch):
    """Every step of the build adds what it adds to the count; after each, the count equals the
    count of the whole pack serialised (checked here by serialising it each time)."""
    counts = []
    start = context._Count.__init__

    def watching(self, pack):
        start(self, pack)
        counts.append((self, pack))

    monkeypatch.setattr(context._Count, "__init__", watching)
    for name in ("append", "extend_text", "set_number"):
        method = getattr(context._Count, name)

        def checked(self, *args, _method=method):
            result = _method(self, *args)
            (pack,) = [p for counter, p in counts if counter is self]
            assert self.total == tokens_of(pack)
            return result
        monkeypatch.setattr(context._Count, name, checked)
    for budget in (300, 2500):
        long_notes.context_pack(note="Lang 1", budget_tokens=budget)
        long_notes.context_pack(query="Gedächtnis Quelle", budget_tokens=budget)
    assert counts


def test_building_a_pack_is_linear_in_its_size(long_notes, monkeypatch):
    """The characters the token estimate reads while a pack is built stay within a small multiple of
    the pack's own size (serialising the whole pack after every chunk, as it once did, read the
    pack again for each of its ~400 chunks)."""
    counted = [0]
    for name in ("estimate_tokens", "content_tokens"):
        original = getattr(context, name, None)
        if original is not None:
            def counting(text, _original=original):
                counted[0] += len(text)
                return _original(text)
            monkeypatch.setattr(context, name, counting)
    pack = long_notes.context_pack(query="Wissen Verknüpfung", budget_tokens=60_000)
    size = len(dumps(pack))
    assert size > 150_000 and pack["used_tokens"] > 55_000
    assert counted[0] < 6 * size, (counted[0], size)
