"""Walk a vault: which markdown files to index, which are left out (and why), which files are attachments."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path


@dataclass(frozen=True)
class VaultFile:
    path: str  # vault-relative, '/' separated
    abs_path: Path
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class ImportWarning:
    path: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "reason": self.reason}


@dataclass
class ScanResult:
    files: list[VaultFile] = field(default_factory=list)
    # Markdown files that exist but are not indexed: vault path -> why (link targets, not missing).
    out_of_corpus: dict[str, str] = field(default_factory=dict)
    attachments: set[str] = field(default_factory=set)  # other files, vault-relative
    warnings: list[ImportWarning] = field(default_factory=list)


@lru_cache(maxsize=256)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    """Glob over '/'-separated paths: `**` spans folders, `*` and `?` stay within one."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def excluded_by(path: str, patterns: list[str]) -> str | None:
    for pattern in patterns:
        if _glob_regex(pattern).match(path):
            return pattern
    return None


def is_markdown(name: str) -> bool:
    return name.lower().endswith(".md")


def scan_vault(
    root: Path,
    *,
    exclude: list[str] | None = None,
    max_file_bytes: int = 2_000_000,
    follow_symlinks: bool = True,
) -> ScanResult:
    """List the vault's files. Dot-folders (.obsidian, .trash, .git) are never entered."""
    root = Path(root)
    result = ScanResult()
    patterns = list(exclude or [])
    seen_dirs: set[tuple[int, int]] = set()

    def visit(folder: Path, rel: str) -> None:
        try:
            info = folder.stat()
        except OSError as exc:
            result.warnings.append(ImportWarning(rel or ".", f"cannot read folder: {exc.strerror or exc}"))
            return
        key = (info.st_dev, info.st_ino)
        if key in seen_dirs:
            result.warnings.append(ImportWarning(rel, "symlink loop: folder already visited, skipped"))
            return
        seen_dirs.add(key)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            result.warnings.append(ImportWarning(rel or ".", f"cannot list folder: {exc.strerror or exc}"))
            return
        for entry in entries:
            if entry.name.startswith("."):
                continue
            child_rel = f"{rel}/{entry.name}" if rel else entry.name
            try:
                is_link = entry.is_symlink()
                if is_link and not follow_symlinks:
                    continue
                if entry.is_dir(follow_symlinks=True):
                    visit(Path(entry.path), child_rel)
                    continue
                if not entry.is_file(follow_symlinks=True):
                    if is_link:
                        result.warnings.append(ImportWarning(child_rel, "broken symlink, skipped"))
                    continue
                stat = entry.stat(follow_symlinks=True)
            except OSError as exc:
                result.warnings.append(ImportWarning(child_rel, f"cannot stat: {exc.strerror or exc}"))
                continue
            if not is_markdown(entry.name):
                result.attachments.add(child_rel)
                continue
            pattern = excluded_by(child_rel, patterns)
            if pattern is not None:
                result.out_of_corpus[child_rel] = f"excluded by pattern {pattern!r}"
                continue
            if stat.st_size > max_file_bytes:
                reason = f"file too large ({stat.st_size:,} bytes > import.max_file_bytes {max_file_bytes:,}), skipped"
                result.warnings.append(ImportWarning(child_rel, reason))
                result.out_of_corpus[child_rel] = "too large"
                continue
            result.files.append(VaultFile(child_rel, Path(entry.path), stat.st_size, stat.st_mtime_ns))

    if not root.is_dir():
        raise FileNotFoundError(f"vault folder {root} does not exist or is not a folder")
    visit(root, "")
    return result
