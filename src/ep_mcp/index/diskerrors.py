"""Writes that fail because of the disk, not the index: full, over quota, read-only.

SQLite answers SQLITE_FULL for a full disk (ENOSPC, and its own ``max_page_count``),
SQLITE_READONLY for a read-only file, folder or mount, and SQLITE_IOERR for other failed writes
(EDQUOT among them, and a ``-shm`` file that cannot grow); Python raises ``OSError`` with ENOSPC,
EDQUOT or EROFS. None of these is damage: the file on disk still holds the last committed index,
which keeps serving, so it is never renamed aside or rebuilt for them.
"""

from __future__ import annotations

import errno
from pathlib import Path

import apsw

from ep_mcp.errors import DiskFullError

SQLITE_DISK_ERRORS: tuple[type[Exception], ...] = (
    apsw.FullError,
    apsw.ReadOnlyError,
    apsw.IOError,
)
OS_DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG})


def is_disk_error(exc: BaseException) -> bool:
    """Whether ``exc`` is a write the disk refused (full, over quota, read-only)."""
    if isinstance(exc, SQLITE_DISK_ERRORS):
        return True
    return isinstance(exc, OSError) and exc.errno in OS_DISK_ERRNOS


def describe(exc: BaseException) -> str:
    """The disk's refusal in a few words ("disk full", "read-only", "I/O error: …")."""
    if isinstance(exc, apsw.FullError) or getattr(exc, "errno", None) == errno.ENOSPC:
        return "disk full"
    if getattr(exc, "errno", None) in (errno.EDQUOT, errno.EFBIG):
        return "over quota"
    if isinstance(exc, apsw.ReadOnlyError) or getattr(exc, "errno", None) == errno.EROFS:
        return "read-only"
    return f"I/O error: {exc}"


def disk_error(path: Path, exc: BaseException) -> DiskFullError:
    """The one-line error for a write to the index at ``path`` that the disk refused."""
    what = describe(exc)
    folder = path.parent
    if what == "read-only":
        text = (
            f"the index at {path} cannot be written: its file or folder is read-only — make "
            f"{folder} writable (or serve the pack with `read_only: true`) and run again; "
            "the previous index keeps serving"
        )
    elif what in ("disk full", "over quota"):
        text = (
            f"the disk holding {folder} is full ({what}) — free space and run again; the "
            "previous index keeps serving"
        )
    else:
        text = (
            f"writing the index at {path} failed ({what}; the disk may be full or over "
            "quota) — free space and run again; the previous index keeps serving"
        )
    return DiskFullError(text, path=path, reason=what)
