"""Writes that fail because of the disk, not the index: full, over quota, read-only.

SQLite answers SQLITE_FULL for a full disk (ENOSPC, and its own ``max_page_count``),
SQLITE_READONLY for a read-only file, folder or mount, and SQLITE_IOERR for other failed writes
(EDQUOT among them, and a ``-shm`` file that cannot grow); Python raises ``OSError`` with ENOSPC,
EDQUOT or EROFS. None of these is damage: the file on disk still holds the last committed index,
which keeps serving, so it is never renamed aside or rebuilt for them.
"""

from __future__ import annotations

import errno
import logging
from pathlib import Path

import apsw

from ep_mcp.errors import DiskFullError

logger = logging.getLogger(__name__)

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


class WriteWatch:
    """Whether the disk takes an index's writes: a refusal is logged once (not per query) and
    kept in ``problem`` (for /health) until a write commits again."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.problem: str | None = None

    def refused(self, exc: BaseException) -> None:
        """A best-effort write (the embedding cache) that the disk refused."""
        self.note(
            f"the index at {self.path} cannot be written ({describe(exc)}) — searches go on, "
            "the embedding cache is not kept; free space or make its folder writable"
        )

    def note(self, problem: str) -> None:
        if self.problem is None:
            logger.warning("%s", problem)
        self.problem = problem

    def committed(self) -> None:
        if self.problem is not None:
            logger.warning("the index at %s is writable again", self.path)
            self.problem = None
