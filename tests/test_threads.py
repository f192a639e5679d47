"""The service under a long-lived, multi-threaded front end: four threads search and read
neighbours (as owner and as agent) while a fifth imports and embeds a vault that keeps
changing. No exception, no "database is locked", every search answers. Plumbing: the
embedder is a deterministic fake (named so)."""

from __future__ import annotations

import threading

from fakes import DeterministicFakeEmbedder

from mindtui.audience import Audience
from mindtui.config import load_settings
from mindtui.models.holder import ModelHolder
from mindtui.service import SearchOptions, Service

QUERIES = ["Zettelkasten", "Wie viele Zettel hatte Luhmann?", "BM25 und Vektorsuche", "spaced repetition",
           "Reciprocal Rank Fusion", "Notizen verknüpfen", "Chunking", "Wissensgraph Obsidian"]
ROUNDS = 4


def test_readers_and_a_writer_at_once(sample_vault, db_path):
    fake = DeterministicFakeEmbedder()
    loads = []

    def factory(settings, say):
        loads.append(1)
        return fake

    holder = ModelHolder(embedder_factory=factory)
    settings = load_settings().with_overrides(db=str(db_path))
    owner = Service(settings, audience=Audience.OWNER, models=holder)
    agent = Service(settings, audience=Audience.AGENT, models=holder)
    assert owner.run_job("nightly", steps=["import", "embed"], vault=sample_vault.root).ok
    errors: list[str] = []
    answered = [0, 0, 0, 0]
    writing = threading.Event()
    writing.set()

    def reader(number: int, service: Service) -> None:
        done = 0
        while writing.is_set() or done < 10:
            query = QUERIES[(number + done) % len(QUERIES)]
            try:
                response = service.search(query, SearchOptions(limit=5, log=number % 2 == 0))
                if any("locked" in notice or "not logged" in notice for notice in response.notices):
                    errors.append(f"reader {number}: {response.notices}")
                if response.results:
                    service.neighbours(response.results[0].note_id)
                answered[number] += 1
            except Exception as exc:  # collected: the assertion below names it
                errors.append(f"reader {number}: {type(exc).__name__}: {exc}")
            done += 1

    def writer() -> None:
        try:
            for round_number in range(ROUNDS):
                sample_vault.write(f"Inbox/Neu {round_number}.md", f"Runde {round_number}: Zettelkasten und "
                                   f"[[BM25]], neu geschrieben.\n")
                note = sample_vault.root / "Konzepte" / "Chunking.md"
                note.write_text(note.read_text(encoding="utf-8") + f"\nNachtrag {round_number}.\n", encoding="utf-8")
                if round_number:
                    sample_vault.remove(f"Inbox/Neu {round_number - 1}.md")
                result = owner.run_job("nightly", steps=["import", "embed"], vault=sample_vault.root)
                if not result.ok:
                    errors.append(f"writer: {[(s.step, s.status, s.error) for s in result.steps]}")
        except Exception as exc:
            errors.append(f"writer: {type(exc).__name__}: {exc}")
        finally:
            writing.clear()

    threads = [threading.Thread(target=reader, args=(n, owner if n < 2 else agent)) for n in range(4)]
    threads.append(threading.Thread(target=writer))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(thread.is_alive() for thread in threads), "a thread hung"
    owner.close()
    agent.close()
    assert errors == []
    assert all(count >= 10 for count in answered), answered
    assert len(loads) == 1  # one model for every thread and both services
    final = Service(settings, audience=Audience.OWNER, models=holder)
    try:
        assert final.note(f"Inbox/Neu {ROUNDS - 1}.md").text.startswith(f"Runde {ROUNDS - 1}")
        assert final.status()["embedding"]["coverage"] == 1.0
    finally:
        final.close()
