"""Full and read-only disks for tests, without faking SQLite.

``fill`` makes a real SQLite connection meet SQLITE_FULL: ``PRAGMA max_page_count`` caps the
file at its current size and a filler table takes every free page, so the next write that
needs a page fails as on a full disk (this works as any user). ``tmpfs`` mounts a small real
filesystem (root only; skipped otherwise) for a disk that is really full, or read-only.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest


def fill(conn: Any) -> None:
    """Leave no room in the database of ``conn`` (an apsw connection): writes then fail.

    The filler rows go into the embedding cache (keys no text has), so the cache's last page,
    where the next entry would go, is full too.
    """
    pages = int(conn.execute("PRAGMA page_count").fetchall()[0][0])
    conn.execute(f"PRAGMA max_page_count={pages}").fetchall()
    n = 0
    for size in (4096, 512, 64, 8, 1):
        for _ in range(100_000):  # bounded: a page holds at most a few hundred small rows
            try:
                conn.execute("INSERT INTO embed_cache VALUES(?, ?)", (f"filler|{n}", b"x" * size))
            except apsw.FullError:
                break
            n += 1


def unfill(conn: Any) -> None:
    """Give the room back (as freeing space on the disk would)."""
    conn.execute("DELETE FROM embed_cache WHERE key LIKE 'filler|%'")
    conn.execute("PRAGMA max_page_count=4294967294").fetchall()


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


@contextlib.contextmanager
def tmpfs(where: Path, size_kb: int) -> Iterator[Path]:
    """A real ``size_kb`` filesystem mounted at ``where`` for the block (root only)."""
    if not is_root():
        pytest.skip("mounting a small tmpfs needs root (the max_page_count tests cover this)")
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False, capture_output=True)


def fill_disk(where: Path) -> Path:
    """Write a file that takes every free byte of the filesystem at ``where``."""
    filler = where / "filler"
    with filler.open("wb", buffering=0) as fh:
        for chunk in (65536, 4096, 1):
            with contextlib.suppress(OSError):
                for _ in range(1 << 20):  # bounded by the disk's size
                    fh.write(b"\0" * chunk)
    return filler


def remount(where: Path, mode: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{mode}", str(where)], check=True)
