"""Replace a damaged index: build a fresh one beside it, then swap it in; keep the damaged file.

The fresh index is built into ``index.db.rebuild-<pid>`` and closed (which folds its WAL back
into the file). Then the damaged file is kept aside as ``index.db.corrupt-<UTC time>`` — a hard
link where the filesystem allows it, so ``index.db`` never goes missing — its ``-wal`` moves
with it and its ``-shm`` is deleted (a stale WAL beside the new file would be replayed into it),
and the fresh file is renamed over ``index.db`` with one atomic ``os.replace``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ep_mcp.errors import IndexBuildError, IndexDamagedError
from ep_mcp.index import integrity

logger = logging.getLogger(__name__)

T = TypeVar("T")
SIDE_FILES = ("-wal", "-shm", "-journal")


def _remove_with_side_files(path: Path) -> None:
    for suffix in ("", *SIDE_FILES):
        with contextlib.suppress(FileNotFoundError):
            Path(str(path) + suffix).unlink()


def aside_path(path: Path, now: float | None = None) -> Path:
    """A free ``PATH.corrupt-<UTC time>`` name for the damaged file."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    candidate = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while os.path.lexists(candidate):
        n += 1
        candidate = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    return candidate


def swap_in(fresh: Path, path: Path, aside: Path) -> None:
    """Keep the damaged `path` as `aside`, then rename `fresh` over `path` atomically."""
    try:
        os.link(path, aside)
        linked = True
    except OSError:  # no hard links here (or the file vanished): move it instead
        linked = False
        if os.path.lexists(path):
            os.replace(path, aside)
    wal = Path(str(path) + "-wal")
    if os.path.lexists(wal):
        os.replace(wal, Path(str(aside) + "-wal"))
    for suffix in ("-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            Path(str(path) + suffix).unlink()
    os.replace(fresh, path)
    if not linked:
        logger.debug("damaged index moved (no hard link) to %s", aside)


def rebuild(path: Path, reason: str, build: Callable[[Path], T]) -> T:
    """Announce the damage in one line, rebuild with ``build(fresh_path)``, swap the result in.

    ``build`` must create the index at the path it is given and close it. Returns what it
    returns. Any failure leaves the damaged file where it was and raises `IndexBuildError`.
    """
    aside = aside_path(path)
    logger.warning(
        "index at %s is damaged (%s) — rebuilding it; the damaged file is kept as %s",
        path,
        reason,
        aside,
    )
    fresh = path.with_name(f"{path.name}.rebuild-{os.getpid()}")
    _remove_with_side_files(fresh)
    try:
        result = build(fresh)
        for suffix in SIDE_FILES:  # closed cleanly, the fresh index is one self-contained file
            if Path(str(fresh) + suffix).exists():
                raise IndexBuildError(f"the rebuilt index {fresh} was not closed cleanly")
        swap_in(fresh, path, aside)
    except OSError as exc:
        _remove_with_side_files(fresh)
        raise IndexDamagedError(
            f"index at {path} is damaged ({reason}) and could not be rebuilt: {exc} — "
            "check that its folder is writable, or delete the file and run `ep-mcp index PACK`",
            path=path,
            reason=reason,
        ) from exc
    except BaseException:
        _remove_with_side_files(fresh)
        raise
    integrity.clear_mark(path)
    return result
