"""Writing vault files for the curation queue: atomic, inside the vault, and only over the content that was indexed.

A write goes to the file's real path (every symlink followed: a note reached through a linked
file or folder is edited where it lives, and the link stays a link), which must lie inside the
vault and outside its dot folders (.obsidian, .trash, .git: never indexed); else EditRefused and
nothing is written. It goes to a temporary file in the same folder (flushed and fsynced, with the old file's
mode) and replaces the file with os.replace, so a reader or a crash sees the old file or the new
one, never half of one. Before it writes, the file must still have the content the index read
(its sha256 equals notes.content_hash): otherwise NoteChanged, and nothing is written.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import uuid
from pathlib import Path

from mindtui.errors import DatabaseError, OperationFailed


class NoteChanged(OperationFailed):
    """The file changed since it was indexed (or vanished): the card must be checked again."""


class EditRefused(OperationFailed):
    """A write the queue will not do (overwrite an existing file, a path outside the vault)."""


class VaultWriteFailed(DatabaseError):
    """The disk refused a vault write (full, read-only, an I/O error): the file is as it was, no
    temporary file is left, and the answer is not recorded. Exit code 4, as when the disk refuses
    the database: the same "storage unusable, fix it and run again"."""


_FULL = (errno.ENOSPC, errno.EDQUOT)
_DENIED = (errno.EACCES, errno.EPERM, errno.EROFS)


def _write_failed(path: Path, exc: OSError) -> VaultWriteFailed:
    if exc.errno in _FULL:
        hint = "the disk is full: free some space and answer again"
    elif exc.errno in _DENIED:
        hint = "check that you may write the file and its folder, then answer again"
    else:
        hint = "check the disk, then answer again"
    return VaultWriteFailed(f"cannot write {path}: {exc.strerror or exc}; the file is unchanged ({hint})")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_bytes(path: Path) -> bytes | None:
    """The file's bytes, None when it does not exist."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise OperationFailed(f"{path}: cannot read: {exc.strerror or exc}") from exc


def read_checked(path: Path, rel: str, expected_hash: str) -> bytes:
    """The file's bytes if they are what was indexed; else NoteChanged (nothing is written)."""
    data = read_bytes(path)
    if data is None:
        raise NoteChanged(f"{rel} is gone since it was indexed; the card is checked again")
    if sha256_hex(data) != expected_hash:
        raise NoteChanged(f"{rel} changed since it was indexed; nothing was written. The note is imported again "
                          "and the card checked again: look at it once more")
    return data


def check_inside(vault: Path, rel: str) -> Path:
    """The absolute path of a vault-relative path; EditRefused for one that leaves the vault."""
    parts = Path(rel).parts
    if not rel or Path(rel).is_absolute() or ".." in parts:
        raise EditRefused(f"{rel!r} is not a path inside the vault")
    return vault / rel


NAME_BYTES_MAX = 255  # what one file or folder name may hold in bytes (ext4, APFS; NTFS in UTF-16 units)


def _unwritable_name(path: Path) -> str | None:
    """Why a file system (or Obsidian, which shows the vault) cannot hold a part of the path: a
    link names anything, `[[` and 300 letters `]]` or a control character included."""
    for part in path.parts:
        if len(part.encode("utf-8", "surrogateescape")) > NAME_BYTES_MAX:
            return f"the name {part[:40]!r}… is longer than {NAME_BYTES_MAX} bytes"
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in part):
            return f"the name {part!r} holds a control character"
    return None


# What Obsidian refuses in a new note's name (it says so when a link to such a name is clicked),
# and Windows too: a vault is often synced to another machine. Names of existing files are kept.
_OBSIDIAN_FORBIDDEN = '*"<>:|?'
_WINDOWS_DEVICES = {"con", "prn", "aux", "nul", *(f"{d}{n}" for d in ("com", "lpt") for n in range(1, 10))}


def unportable_name(rel: str) -> str | None:
    """Why a new note may not be written under the vault path `rel` (None: it may)."""
    parts = (rel[:-3] if rel.lower().endswith(".md") else rel).split("/")
    if ".." in parts:  # a link written relative to its note, climbing out of it: `[[../../elsewhere]]`
        return "it climbs out of the vault ('..')" if _climbs_out(parts) else "it holds a '..' folder"
    for number, part in enumerate(parts, start=1):
        forbidden = sorted({ch for ch in part if ch in _OBSIDIAN_FORBIDDEN})
        if forbidden:
            return (f"the name {part!r} holds {' '.join(forbidden)}, which Obsidian and Windows do not allow in "
                    "a file name")
        if part.split(".")[0].strip().lower() in _WINDOWS_DEVICES:
            return f"the name {part!r} is a device name on Windows"
        if number < len(parts) and part != part.rstrip(". "):  # a note's own name has `.md` after it
            return f"the folder name {part!r} ends in a dot or a space, which Windows drops"
    return None


def _climbs_out(parts: list[str]) -> bool:
    depth = 0
    for part in parts:
        depth += -1 if part == ".." else 0 if part in ("", ".") else 1
        if depth < 0:
            return True
    return False


def _in_dot_folder(path: Path) -> bool:
    return any(part.startswith(".") for part in path.parts)


def write_target(vault: Path, rel: str) -> Path:
    """The real path a write to the vault path `rel` goes to. EditRefused (nothing is written) when
    it leaves the vault, through a symlink too, or lies in a dot folder, which the importer never
    enters: a file written there would never be indexed."""
    path = check_inside(vault, rel)
    unwritable = _unwritable_name(Path(rel))
    if unwritable:
        raise EditRefused(f"{rel[:80]!r}: {unwritable}; nothing was written (retarget the link instead)")
    if _in_dot_folder(Path(rel)):
        raise EditRefused(f"{rel} is in a dot folder, which is never indexed; nothing was written")
    real = Path(os.path.realpath(path))
    try:
        inside = real.relative_to(os.path.realpath(vault))
    except ValueError:
        raise EditRefused(f"{rel} leads through a symlink to {real}, outside the vault; nothing was written "
                          "(edit that file by hand)") from None
    if _in_dot_folder(inside):
        raise EditRefused(f"{rel} leads through a symlink to {inside.as_posix()}, in a dot folder of the vault, "
                          "which is never indexed; nothing was written (edit that file by hand)")
    return real


def atomic_write(path: Path, data: bytes, *, new: bool = False) -> None:
    """Write `data` to `path` through a temporary file and os.replace. new=True: the file must not
    exist yet (EditRefused otherwise); its folder is created and the file gets the umask's mode.
    VaultWriteFailed when the disk refuses (the original intact, the temporary file removed)."""
    temp: Path | None = None
    try:
        if new:
            if path.exists():
                raise EditRefused(f"{path} exists already; not overwritten")
            path.parent.mkdir(parents=True, exist_ok=True)
            mode = None
        else:
            mode = stat.S_IMODE(path.stat().st_mode)
        temp = path.parent / f".{path.name}.{uuid.uuid4().hex[:12]}.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if new else 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temp, mode)
        if new:
            _place_new(temp, path)
        else:
            os.replace(temp, path)
        _fsync_folder(path.parent)
    except BaseException as exc:
        if temp is not None:
            temp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _write_failed(path, exc) from exc
        raise


def _place_new(temp: Path, path: Path) -> None:
    """Move a new file in place without overwriting one that appeared meanwhile (a hard link fails
    then); a file system without hard links gets the rename after the existence check."""
    try:
        os.link(temp, path)
    except FileExistsError:
        raise EditRefused(f"{path} exists already; not overwritten") from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        os.replace(temp, path)
        return
    temp.unlink()


def remove(path: Path) -> None:
    try:
        path.unlink()
        _fsync_folder(path.parent)
    except OSError as exc:
        raise _write_failed(path, exc) from exc


def _fsync_folder(folder: Path) -> None:
    """Make the rename itself durable (a folder's entry is written by fsync on the folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # a platform without directory fds: the rename is still atomic
    try:
        os.fsync(fd)
    except OSError as exc:  # some file systems refuse fsync on a folder; the data itself is synced
        if exc.errno not in (errno.EINVAL, errno.EOPNOTSUPP):
            raise
    finally:
        os.close(fd)
