"""Scratch databases for evaluation: a vault (or a BEIR corpus written out as one) indexed and embedded.

Evaluation never touches the user's database. Each source gets its own scratch database under
`<data dir>/eval/`, keyed by the source's absolute path, so a rerun only imports and embeds
what changed (usually nothing) and starts measuring at once. A scratch database carries a
marker in `meta`; evaluation refuses any existing database without it (another mindtui
database given by mistake would otherwise be rewritten with the evaluation's notes).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from mindtui.config import Settings
from mindtui.errors import InputError
from mindtui.jobs.runner import StepError, run_job
from mindtui.progress import StepProgress
from mindtui.store import open_database
from mindtui.store.meta import get_meta_if_any, set_meta

SCRATCH_KEY = "scratch"


class EvalInputError(InputError):
    """An evaluation input that cannot be used; the message says which file and why."""


def claim_scratch(settings: Settings, db_path: Path, purpose: str) -> None:
    """Make sure `db_path` may be (re)written by evaluation: new, or marked as a scratch index."""
    if db_path.resolve() == settings.db_path.resolve():
        raise EvalInputError(f"{db_path} is your database; evaluation imports other notes into its scratch "
                             "index and must not touch it")
    if db_path.exists() and db_path.stat().st_size > 0:
        conn = open_database(db_path, migrate=False, readonly=True)
        try:
            marker = get_meta_if_any(conn, SCRATCH_KEY)
        finally:
            conn.close()
        if marker is None:
            raise EvalInputError(f"{db_path} is a mindtui database but not a scratch index (it has no scratch "
                                 "marker): evaluation would rewrite it with other notes. Name a new file")
        return
    mark_scratch(db_path, purpose)


def mark_scratch(db_path: Path, purpose: str) -> None:
    """Mark a database as a scratch index that evaluation may rewrite."""
    conn = open_database(db_path)
    try:
        with conn:
            set_meta(conn, SCRATCH_KEY, purpose)
    finally:
        conn.close()


def scratch_dir(settings: Settings, override: Path | None = None) -> Path:
    return override if override is not None else settings.data_dir / "eval"


def _slug(path: Path) -> str:
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:10]
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", path.resolve().name or "root").strip("-") or "source"
    return f"{name}-{digest}"


def prepare_vault(settings: Settings, vault: Path, db_path: Path, progress: StepProgress | None = None,
                  message: Callable[[str], None] | None = None, embed: bool = True, holder=None) -> dict:
    """Import (incrementally) and embed a vault into a scratch database; returns the step reports."""
    claim_scratch(settings, db_path, f"eval of {vault.resolve()}")
    steps = ["import", "embed"] if embed else ["import"]
    # A scratch index follows its source wholesale: the mass-delete guard protects real vaults only.
    result = run_job("eval", settings, db_path=db_path, vault=vault, steps=steps, progress=progress, message=message,
                     allow_mass_delete=True, models=holder)
    failed = [s for s in result.steps if s.status != "ok"]
    if failed:
        raise StepError(f"preparing {vault} failed in step {failed[0].step}: {failed[0].error}")
    return {s.step: s.report for s in result.steps}


def vault_db_path(settings: Settings, vault: Path, scratch: Path | None = None) -> Path:
    return scratch_dir(settings, scratch) / f"vault-{_slug(vault)}.db"


# -- BEIR ---------------------------------------------------------------------------------------
@dataclass
class BeirSet:
    name: str
    corpus: dict[str, tuple[str, str]]  # doc id -> (title, text)
    queries: dict[str, str]
    qrels: dict[str, dict[str, float]]  # query id -> doc id -> gain


def _read_jsonl(path: Path) -> list[dict]:
    rows = []
    try:
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    try:
                        rows.append(json.loads(line))
                    except json.JSONDecodeError as exc:
                        raise EvalInputError(f"{path}:{number}: not JSON ({exc.msg})") from exc
    except OSError as exc:
        raise EvalInputError(f"{path}: cannot read ({exc.strerror})") from exc
    return rows


def load_beir(directory: Path, split: str = "test") -> BeirSet:
    """corpus.jsonl {_id,title,text}, queries.jsonl {_id,text}, qrels/<split>.tsv (query, doc, score)."""
    for name in ("corpus.jsonl", f"qrels/{split}.tsv"):
        if not (directory / name).is_file():
            raise EvalInputError(f"{directory}: not a BEIR directory (no {name})")
    # A variant corpus (e.g. XQuAD's sentence level) may share its parent's queries.
    queries_file = next((d / "queries.jsonl" for d in (directory, directory.parent)
                         if (d / "queries.jsonl").is_file()), None)
    if queries_file is None:
        raise EvalInputError(f"{directory}: not a BEIR directory (no queries.jsonl here or in its parent)")
    try:
        corpus = {str(row["_id"]): (str(row.get("title") or ""), str(row.get("text") or ""))
                  for row in _read_jsonl(directory / "corpus.jsonl")}
        queries = {str(row["_id"]): str(row["text"]) for row in _read_jsonl(queries_file)}
    except (KeyError, TypeError, AttributeError) as exc:
        raise EvalInputError(f"{directory}: a corpus or query line lacks \"_id\"/\"text\" ({exc})") from exc
    qrels: dict[str, dict[str, float]] = {}
    for number, line in enumerate((directory / f"qrels/{split}.tsv").read_text(encoding="utf-8").splitlines(), 1):
        parts = line.split("\t")
        if len(parts) < 3 or (number == 1 and not parts[2].strip().lstrip("-").isdigit()):
            continue  # the header line
        query_id, doc_id, score = parts[0], parts[1], float(parts[2])
        if score > 0 and query_id in queries:
            qrels.setdefault(query_id, {})[doc_id] = score
    return BeirSet(directory.resolve().name, corpus, {q: queries[q] for q in qrels}, qrels)


def _doc_file_name(doc_id: str, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_-]+", "_", doc_id)[:80] or "doc"
    name, number = base, 1
    while name.casefold() in taken:
        number += 1
        name = f"{base}_{number}"
    taken.add(name.casefold())
    return name + ".md"


def write_beir_vault(beir: BeirSet, vault: Path) -> dict[str, str]:
    """Write each document as a note (title in frontmatter); returns note path -> doc id.

    Files whose content is already right are left alone, so a rerun imports nothing.
    """
    vault.mkdir(parents=True, exist_ok=True)
    taken: set[str] = set()
    path_to_doc: dict[str, str] = {}
    for doc_id, (title, text) in sorted(beir.corpus.items()):
        name = _doc_file_name(doc_id, taken)
        content = (f"---\ntitle: {json.dumps(title, ensure_ascii=False)}\n---\n" if title.strip() else "") + text + "\n"
        target = vault / name
        if not target.exists() or target.read_text(encoding="utf-8") != content:
            target.write_text(content, encoding="utf-8")
        path_to_doc[name] = doc_id
    for stale in vault.glob("*.md"):
        if stale.name not in path_to_doc:
            stale.unlink()
    return path_to_doc


def beir_workspace(settings: Settings, directory: Path, scratch: Path | None = None) -> tuple[Path, Path]:
    """(vault folder, database path) of a BEIR set's scratch copy."""
    base = scratch_dir(settings, scratch) / f"beir-{_slug(directory)}"
    return base / "vault", base / "index.db"
