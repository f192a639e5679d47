"""Walk a vault: which markdown files to index, which are left out (and why), which files are attachments."""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from mindtui.text.globs import excluded_by
from mindtui.text.names import not_utf8


@dataclass(frozen=True)
class VaultFile:
    path: str  # vault-relative, '/' separated
    location: str  # where the file is read (a Path made for each of 100k files costs a second a scan)
    size: int
    mtime_ns: int

    @property
    def abs_path(self) -> Path:
        return Path(self.location)


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
    # Folders (or linked files) that could not be read this time: notes from there are kept.
    unlisted: set[str] = field(default_factory=set)


def is_markdown(name: str) -> bool:
    return name.lower().endswith(".md")


def _loops(link: str) -> bool:
    try:
        os.stat(link)
        return False
    except OSError as exc:
        return exc.errno == errno.ELOOP


def inside(path: str, root: str) -> bool:
    """`path` is `root` or lies under it (both real paths: no link is resolved here)."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def scan_vault(
    root: Path,
    *,
    exclude: list[str] | tuple[str, ...] | None = None,
    max_file_bytes: int,
    follow_external_symlinks: bool = False,
) -> ScanResult:
    """List the vault's files. Dot-folders (.obsidian, .trash, .git) are never entered.

    Symlinks inside the vault are followed, after every real folder has been walked, so a file
    reached both directly and through a link is indexed once, under its real path. A link whose
    target lies outside the vault is skipped with a warning unless `follow_external_symlinks`.
    A folder that cannot be listed, or a link whose target is gone (an unmounted disk), is in
    `unlisted`: the importer keeps the notes it had there instead of deleting them.
    """
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"vault folder {root} does not exist or is not a folder")
    result = ScanResult()
    patterns = list(exclude or [])
    real_root = os.path.realpath(root)
    seen_dirs: set[tuple[int, int]] = set()
    seen_files: dict[tuple[int, int], str] = {}
    deferred: list[tuple[os.DirEntry, str]] = []  # symlinks, followed after the real tree

    def warn(rel: str, reason: str) -> None:
        result.warnings.append(ImportWarning(rel or ".", reason))

    def visit(folder: Path, rel: str) -> None:
        try:
            info = folder.stat()
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            warn(rel, f"cannot list folder: {exc.strerror or exc}; the notes indexed from it are kept")
            result.unlisted.add(rel)
            return
        seen_dirs.add((info.st_dev, info.st_ino))
        for entry in entries:
            if entry.name.startswith("."):
                continue
            child_rel = f"{rel}/{entry.name}" if rel else entry.name
            shown = not_utf8(child_rel)
            if shown is not None:
                warn(shown, "the name is not valid UTF-8: skipped (rename it to index it)")
                continue
            try:
                if entry.is_symlink():
                    deferred.append((entry, child_rel))
                elif entry.is_dir(follow_symlinks=False):
                    visit(Path(entry.path), child_rel)
                elif entry.is_file(follow_symlinks=False):
                    add_file(entry, child_rel, entry.stat(follow_symlinks=False))
                else:
                    not_a_file(child_rel, entry.stat(follow_symlinks=False))
            except OSError as exc:
                warn(child_rel, f"cannot stat: {exc.strerror or exc}; a note indexed from it is kept")
                result.unlisted.add(child_rel)

    def follow(entry: os.DirEntry, rel: str) -> None:
        target = os.path.realpath(entry.path)
        if _loops(entry.path):
            warn(rel, "symlink loop (links that point to each other, never to a file): skipped")
            return
        if not os.path.exists(target):
            warn(rel, f"broken symlink (target {target} is missing); notes indexed from it are kept")
            result.unlisted.add(rel)
            return
        if not inside(target, real_root) and not follow_external_symlinks:
            warn(rel, f"symlink to {target}, outside the vault: not followed "
                      "(set import.follow_external_symlinks: true to index it)")
            return
        info = os.stat(target)
        if os.path.isdir(target):
            if inside(os.path.realpath(os.path.dirname(entry.path)), target):
                warn(rel, "symlink loop (it points to a folder that contains it): skipped")
                return
            if (info.st_dev, info.st_ino) in seen_dirs:
                warn(rel, "symlink to a folder that is indexed already (a second path to it): skipped")
                return
            visit(Path(entry.path), rel)
        elif os.path.isfile(target):
            add_file(entry, rel, info)
        else:
            not_a_file(rel, info)

    def not_a_file(rel: str, info: os.stat_result) -> None:
        """A FIFO, a socket or a device under a note's name: never read (a FIFO would block the import)."""
        if is_markdown(rel):
            kind = "a FIFO" if stat.S_ISFIFO(info.st_mode) else "a socket" if stat.S_ISSOCK(info.st_mode) else "a device"
            warn(rel, f"{kind}, not a file: skipped")

    def add_file(entry: os.DirEntry, rel: str, stat: os.stat_result) -> None:
        if not is_markdown(entry.name):
            result.attachments.add(rel)
            return
        pattern = excluded_by(rel, patterns)
        if pattern is not None:
            result.out_of_corpus[rel] = f"excluded by pattern {pattern!r}"
            return
        key = (stat.st_dev, stat.st_ino)
        if key in seen_files:
            warn(rel, f"symlink to {seen_files[key]}, which is indexed already: skipped")
            return
        seen_files[key] = rel
        if stat.st_size > max_file_bytes:
            reason = f"file too large ({stat.st_size:,} bytes > import.max_file_bytes {max_file_bytes:,}), skipped"
            warn(rel, reason)
            result.out_of_corpus[rel] = "too large"
            return
        result.files.append(VaultFile(rel, entry.path, stat.st_size, stat.st_mtime_ns))

    visit(root, "")
    while deferred:
        batch, deferred[:] = list(deferred), []
        for entry, rel in batch:
            try:
                follow(entry, rel)
            except OSError as exc:
                warn(rel, f"cannot follow symlink: {exc.strerror or exc}")
                result.unlisted.add(rel)
    result.files.sort(key=lambda f: f.path)
    return result


def under_any(path: str, prefixes: set[str]) -> bool:
    """Whether a vault path lies in (or is) one of these vault-relative folders or files."""
    return any(prefix == "" or path == prefix or path.startswith(prefix + "/") for prefix in prefixes)
