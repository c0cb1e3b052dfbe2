"""Advisory locks between ep-mcp processes: one embedding run per index, one model compile per
models folder.

A lock is an ``fcntl.flock`` on a small file beside what it guards (``<index>.lock``,
``<models>/.compile.lock``). The kernel drops it when its holder exits, however it exits, so a
killed server never leaves a stale lock. The file is opened without following a link
(``O_NOFOLLOW``): a link planted in its place is refused, not written through. Locks are per open
file, so two holders in one process exclude each other too.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from ep_mcp.errors import IndexBuildError

_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC


def lock_path(index: Path) -> Path:
    """The lock file of the index at ``index`` (beside it, in the same folder)."""
    return index.with_name(index.name + ".lock")


def _open(path: Path) -> int:
    try:
        return os.open(path, _FLAGS, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise IndexBuildError(
                f"the lock file {path} is a link — remove it (ep-mcp never follows links there)"
            ) from None
        raise IndexBuildError(
            f"cannot open the lock file {path} ({exc.strerror}) — check the folder's permissions"
        ) from None


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold the lock at ``path`` for the block, waiting for another holder to let it go."""
    fd = _open(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the file drops the lock


@contextlib.contextmanager
def try_exclusive(path: Path) -> Iterator[bool]:
    """The lock at ``path`` for the block if it is free now: yields True (held) or False
    (another process holds it; nothing is waited for)."""
    fd = _open(path)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def embedding_lock(index: Path) -> contextlib.AbstractContextManager[bool]:
    """The lock of one embedding run on the index at ``index``, if no other process holds it:
    a second server on the same pack does not embed it again (see `try_exclusive`)."""
    return try_exclusive(lock_path(index))
