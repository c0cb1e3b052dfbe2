"""Is this file a healthy ep-mcp index? Checks that run when an index is opened.

Three layers, cheapest first: the file's first 100 bytes (SQLite's magic string, page size, and
whether the file is as long as its header says); the schema (an empty or foreign database has
none of our tables); then ``PRAGMA quick_check`` — b-tree structure plus FTS5's own consistency
check — for files up to ``QUICK_CHECK_MAX_BYTES``. Larger files skip the quick check; damage in
them is caught when a query or a build meets it (``DAMAGE_ERRORS``), recorded in a marker file
next to the index, and answered on the next open.

Measured on this machine (SQLite 3.54, warm cache): quick_check costs 24 ms on a 6 MB index (the
home-assistant pack with the local model), 28 ms on 12 MB and 2.4 s on a synthetic 158 MB index
(30k chunks) — about 15 ms per MB at scale, hence the 32 MB ceiling (≈0.5 s at worst).

A file that passed the quick check is vouched for in a record beside it (``index.db.checked``):
its device, inode, size, modification and change times and its first 100 bytes, taken before
the check. A later open that finds the file exactly so (and no write-ahead log holding pages for
it) skips the quick check on its path and runs it on a thread instead (`check_behind`): damage
found there is marked, so the next open rebuilds, and met meanwhile as ``DAMAGE_ERRORS``. Any
write to the file moves its change time, which no program can set back; a file written within
``QUIET_NS`` of the check is never vouched for (a timestamp tick could hide a write).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
import threading
import time
from pathlib import Path
from typing import Any

import apsw

from ep_mcp.errors import IndexDamagedError

QUICK_CHECK_MAX_BYTES = 32 * 1024 * 1024
MAGIC = b"SQLite format 3\x00"
TABLES = frozenset({"meta", "files", "chunks", "chunks_fts", "vectors", "embed_cache"})

QUIET_NS = 2_000_000_000  # a file changed more recently than this is checked, never vouched for

# apsw errors that mean "the file is damaged", wherever they are raised
DAMAGE_ERRORS: tuple[type[Exception], ...] = (apsw.CorruptError, apsw.NotADBError)

logger = logging.getLogger(__name__)


def marker(path: Path) -> Path:
    """The file that records damage met after the index was opened (read on the next open)."""
    return path.with_name(path.name + ".damaged")


def checked_record(path: Path) -> Path:
    """The file that vouches for `path` as it was when it last passed the quick check."""
    return path.with_name(path.name + ".checked")


def _write_beside(target: Path, text: str) -> None:
    """Best effort; a link or anything but a regular file at ``target`` is never written
    through."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    with contextlib.suppress(OSError):
        fd = os.open(target, flags | getattr(os, "O_NONBLOCK", 0), 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text + "\n")


def mark_damaged(path: Path, reason: str) -> None:
    """Remember that `path` is damaged, so the next open rebuilds it (best effort)."""
    with contextlib.suppress(OSError):
        checked_record(path).unlink(missing_ok=True)
    _write_beside(marker(path), reason)


def clear_mark(path: Path) -> None:
    for old in (marker(path), checked_record(path)):
        with contextlib.suppress(OSError):
            old.unlink(missing_ok=True)


def _stat_head(path: Path, limit: int) -> tuple[os.stat_result, bytes]:
    """A regular file's stat and first ``limit`` bytes, opened without following a link and
    without blocking (a FIFO swapped in after the location checks is refused, not waited on)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        return st, os.read(fd, limit)
    finally:
        os.close(fd)


def _head(path: Path, limit: int) -> tuple[int, bytes]:
    """A regular file's size and first ``limit`` bytes (see `_stat_head`)."""
    st, head = _stat_head(path, limit)
    return st.st_size, head


def signature(path: Path) -> str | None:
    """What vouches for the file's state: device, inode, size, modification and change times
    and its header. None when it cannot be read, was changed within ``QUIET_NS``, or a
    write-ahead log beside it holds pages (the file alone is not the database then)."""
    try:
        st, head = _stat_head(path, 100)
    except OSError:
        return None
    if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) < QUIET_NS or _has_wal(path):
        return None
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{head.hex()}"


def vouched(path: Path) -> bool:
    """Whether the file is exactly as it was when it last passed the quick check."""
    try:
        recorded = _head(checked_record(path), 4096)[1].decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return False
    return bool(recorded) and recorded == signature(path)


def check_file(path: Path) -> str | None:
    """What is wrong with the file before SQLite reads it, or None when its header looks sane."""
    try:
        size, head = _head(path, 100)
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    try:
        noted = _head(marker(path), 4096)[1].decode("utf-8", "replace").strip()
    except OSError:
        noted = ""
    if noted:
        return f"damage seen earlier: {noted}"
    if size == 0:
        return "empty file (0 bytes)"
    if len(head) < 100:
        return f"truncated to {size} bytes"
    if head[:16] != MAGIC:
        return "zeroed header" if not any(head) else "not a SQLite database"
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        return f"invalid page size {page_size} in the header"
    pages = int.from_bytes(head[28:32], "big")
    trusted = head[24:28] == head[92:96]  # the header's page count is valid only then
    if trusted and pages and size < pages * page_size and not _has_wal(path):
        return f"truncated: {size} bytes of {pages * page_size}"
    return None


def _has_wal(path: Path) -> bool:
    """Whether a write-ahead log with frames lies beside ``path``. A checkpoint the disk cut
    short (full) leaves the file shorter than its header says while the log still holds every
    page: SQLite reads it whole, and the next checkpoint completes it — that is not damage
    (``check_database``'s quick check reads through the log and judges it)."""
    try:
        return Path(str(path) + "-wal").stat().st_size > 32  # more than the log's header
    except OSError:
        return False


def check_database(conn: Any, size: int, path: Path | None = None) -> str | None:
    """What is wrong with an opened index, or None. Raises DAMAGE_ERRORS on unreadable pages.

    ``path`` (the file ``conn`` opened): a file vouched for (see the module docstring) has its
    quick check run behind the open instead; one that passes it now is vouched for.
    """
    tables = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if not tables:
        return "no tables: an empty SQLite database"
    missing = sorted(TABLES - tables)
    if missing:
        return f"not an ep-mcp index: no table {', '.join(missing)}"
    if size > QUICK_CHECK_MAX_BYTES:
        conn.execute("SELECT count(*) FROM meta").fetchall()
        return None
    if path is not None and vouched(path):
        conn.execute("SELECT count(*) FROM meta").fetchall()
        threading.Thread(
            target=check_behind, args=(path,), name="ep-mcp-check", daemon=True
        ).start()
        return None
    state = signature(path) if path is not None else None  # taken before the check
    problem = _quick_check(conn)
    if problem is None and path is not None and state is not None:
        _write_beside(checked_record(path), state)
    return problem


def _quick_check(conn: Any) -> str | None:
    rows = conn.execute("PRAGMA quick_check(3)").fetchall()
    if [tuple(r) for r in rows] == [("ok",)]:
        return None
    first = " ".join(str(rows[0][0]).split()).removeprefix("*** in database main *** ")
    return f"integrity check failed: {first[:160]}"


def check_behind(path: Path) -> None:
    """The quick check of a vouched-for file, on its own read-only connection: damage found
    is marked (`mark_damaged`), so the next open rebuilds; a file gone or locked is left to
    the next open's check."""
    try:
        flags = apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_NOFOLLOW
        conn = apsw.Connection(str(path), flags=flags)
        try:
            problem = _quick_check(conn)
        finally:
            conn.close()
    except DAMAGE_ERRORS as exc:
        problem = describe(exc)
    except (apsw.Error, OSError) as exc:
        logger.debug("the check behind the open of %s did not run: %s", path, exc)
        return
    if problem is not None:
        logger.warning("index at %s is damaged (%s) — the next start rebuilds it", path, problem)
        mark_damaged(path, problem)


def damaged(path: Path, reason: str) -> IndexDamagedError:
    """The error for a damaged index found while opening it (a writable pack rebuilds it)."""
    return IndexDamagedError(
        f"index at {path} is damaged ({reason}) — run `ep-mcp index PACK` to rebuild it",
        path=path,
        reason=reason,
    )


def describe(exc: BaseException) -> str:
    """A damage error as a short reason."""
    if isinstance(exc, apsw.NotADBError):
        return "not a database"
    return f"corrupt: {exc}"
