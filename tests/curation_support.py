"""A small vault with one cause of every curation kind, indexed the way the nightly job does it
(import with its link cards, vectors from a keyword embedder, the graph step with all kinds)."""

from __future__ import annotations

import numpy as np

from fakes import KeywordEmbedder, unit_at_cosine
from mindtui.config import load_settings
from mindtui.jobs.runner import run_job
from mindtui.models.sweep import run_embed_sweep
from mindtui.store import open_database

TEMPLATE = "---\ncreated: \"{{date}}\"\n---\n# {{title}}\n\nNeu um {{time}}. {{author}} bleibt.\n"
ALPHA = ("# Alpha\n\nApfelwort steht hier. Siehe [[Fehlt]] und [[Fehlt|das Fehlende]].\n\n"
         "Eingebettet: ![[Fehlt#Teil]]. Im Code `[[Fehlt]]` nicht.\n\nAuch [[Doppelt]] und [[Doppelt|zwei]].\n")
BETA = "# Beta\n\nBirnenwort steht hier. Wieder [[Fehlt]].\n"
LOG = ("# Arbeitslog\n\nLogwort.\n\n| Datum | Sitzung | Notizen |\n|---|---|---|\n"
       "| 2026-10-01 | S1 | [[Alpha]] [[Gamma]] |\n"
       "| 2026-10-02 | S2 | [[Alpha]] [[Beta]] [[Gamma]] |\n")


def axis(index: int, dim: int = 384) -> np.ndarray:
    vector = np.zeros(dim, dtype=np.float32)
    vector[index] = 1.0
    return vector


# Alpha and Beta are close in meaning (cosine 0.97); every other note has a direction of its own.
EMBEDDER = KeywordEmbedder(axis(0), {
    "Apfelwort": unit_at_cosine(1.0), "Birnenwort": unit_at_cosine(0.97), "Kieselwort": axis(2),
    "Wolkenwort": axis(3), "Regenwort": axis(4), "Logwort": axis(5), "Nebelwort": unit_at_cosine(0.96)})


def write_vault(vault) -> None:
    vault.write("Alpha.md", ALPHA, dedent=False)
    vault.write("Beta.md", BETA, dedent=False)
    vault.write("Gamma.md", "# Gamma\n\nKieselwort.\n", dedent=False)
    vault.write("A/Doppelt.md", "# Doppelt A\n\nWolkenwort.\n", dedent=False)
    vault.write("B/Doppelt.md", "# Doppelt B\n\nRegenwort.\n", dedent=False)
    vault.write("Journal/Arbeitslog.md", LOG, dedent=False)
    vault.write("Templates/Neue Notiz.md", TEMPLATE, dedent=False)


def settings_for(db_path, vault, **sections):
    """Settings on this database: a mass edit is a session of more than 2 notes."""
    overrides = {"db": str(db_path), "graph": {"max_notes_per_session": 2}}
    for name, values in sections.items():
        overrides.setdefault(name, {}).update(values)
    return load_settings(overrides=overrides)


def index(settings, vault, steps=("import",)):
    result = run_job("index", settings, db_path=settings.db_path, vault=vault.root, steps=list(steps))
    assert result.ok, [(s.step, s.error) for s in result.steps]
    return result


def embed(settings) -> None:
    conn = open_database(settings.db_path)
    try:
        run_embed_sweep(conn, EMBEDDER, batch_size=16)
    finally:
        conn.close()


def nightly(settings, vault):
    """Import (link cards), embed (keyword vectors), graph step (every kind)."""
    index(settings, vault)
    embed(settings)
    return index(settings, vault, steps=("graph",))


def rows(db_path) -> list[tuple]:
    conn = open_database(db_path)
    try:
        return conn.execute("SELECT * FROM curation_items ORDER BY item_id").fetchall()
    finally:
        conn.close()


def query(db_path, sql: str, args=()) -> list[tuple]:
    conn = open_database(db_path)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()
