"""Containment: the one way the content of a pack or tap file is read from disk.

The rule, applied at index time (the pack reader) and at serve time (skill_read, the live
read of reconstruct mode) alike:

- the requested path is pack-relative: ``/``-separated, no empty, ``.`` or ``..`` segment, no
  segment starting with ``.`` (hidden files, ``.git``, ``.ep-mcp``), no NUL, no backslash;
- its *real* path (every symlink resolved) is inside the real root, and no segment of the real
  path below the root starts with ``.`` — so a link may be followed only when its target obeys
  the same rule (``alias.md -> real.md`` works; ``a.md -> ../.git/config`` does not);
- the file is opened segment by segment from the root with ``O_NOFOLLOW`` (``openat``), so a
  folder swapped for a symlink after the check fails to open instead of leading out, and the
  last segment is opened ``O_NONBLOCK`` and then ``fstat``-ed: only a regular file is read
  (a FIFO, socket or device never blocks or streams), and never more than a size cap, before a
  deadline.

Hard links cannot be told apart from the file they link (they *are* that file): a hard link
inside a pack to a file elsewhere is served like any other file. Only the operator can create
one, so it counts as the operator's own content.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from ep_mcp.errors import NextStep, NotFoundError

MAX_PATH_CHARS = 4096
READ_CHUNK = 1 << 20
LIVE_READ_DEADLINE_S = 2.0  # reconstruct's live read: never longer than this per file

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_FILE_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
_AT_SUPPORTED = os.open in os.supports_dir_fd and bool(_NOFOLLOW)


class ContainmentError(NotFoundError):
    """A path a pack may not serve: outside the root, hidden, not a regular file, too big."""

    def __init__(self, rel: str, reason: str) -> None:
        self.rel = rel
        self.reason = reason
        super().__init__(
            f"'{_short(rel)}' cannot be served: {reason} — packs serve regular files inside "
            "the pack folder, outside hidden folders",
            next_step=NextStep(
                " (list them with ep_list_topics)", " (list them with `ep-mcp topics PACK`)"
            ),
        )


class FileTooLargeError(ContainmentError):
    def __init__(self, rel: str, size: int, limit: int) -> None:
        self.size = size
        self.limit = limit
        super().__init__(rel, f"file is {size} bytes, over the {limit}-byte limit")


@dataclass(frozen=True)
class FileBytes:
    """What was read: the bytes, and the size and mtime of the opened file."""

    data: bytes
    size: int
    mtime_ns: int


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def is_hidden(name: str) -> bool:
    """A hidden file or folder (``.git``, ``.ep-mcp``, ``.env``, and ``.``/``..`` themselves)."""
    return name.startswith(".")


def pack_parts(rel: str) -> tuple[str, ...]:
    """The segments of a pack-relative path, or ContainmentError (before touching the disk)."""
    if not isinstance(rel, str) or not rel or len(rel) > MAX_PATH_CHARS:
        raise ContainmentError(str(rel)[:200], "not a pack-relative path")
    if "\x00" in rel or "\\" in rel:
        raise ContainmentError(rel, "NUL or backslash in the path")
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        raise ContainmentError(rel.encode("utf-8", "replace").decode(), "not valid UTF-8") from None
    parts = tuple(rel.split("/"))
    for part in parts:
        if not part:
            raise ContainmentError(rel, "absolute path or empty segment")
        if is_hidden(part):
            raise ContainmentError(rel, "hidden or relative (`.`) segment")
    return parts


def real_root(root: Path) -> Path:
    return Path(os.path.realpath(root))


def contained_path(root: Path, rel: str) -> Path:
    """The real path of ``rel`` under ``root`` if the containment rule allows it.

    Raises ContainmentError naming the reason (never an absolute path). Point in time only:
    :func:`read_contained` re-checks while opening, so use that to read.
    """
    parts = pack_parts(rel)
    base = real_root(root)
    candidate = base.joinpath(*parts)
    try:
        real = Path(os.path.realpath(candidate, strict=True))
    except OSError:
        if os.path.islink(candidate):
            raise ContainmentError(rel, "symlink points outside the pack (or is broken)") from None
        raise ContainmentError(rel, "no such file") from None
    try:
        inner = real.relative_to(base).parts
    except ValueError:
        raise ContainmentError(rel, "symlink points outside the pack") from None
    if not inner:
        raise ContainmentError(rel, "not a regular file")
    if any(is_hidden(p) for p in inner):
        raise ContainmentError(rel, "symlink points into a hidden file or folder")
    return real


def _open_beneath(base: Path, inner: tuple[str, ...]) -> int:
    """Open ``base/inner…`` following no symlink below ``base`` (``openat`` per segment)."""
    if not _AT_SUPPORTED:  # pragma: no cover - platforms without openat/O_NOFOLLOW
        return os.open(base.joinpath(*inner), _FILE_FLAGS | _CLOEXEC | _NOFOLLOW)
    dir_fd = os.open(base, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        for name in inner[:-1]:
            next_fd = os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=dir_fd)
            os.close(dir_fd)
            dir_fd = next_fd
        return os.open(inner[-1], _FILE_FLAGS | _NOFOLLOW | _CLOEXEC, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


def _read_fd(fd: int, rel: str, limit: int, deadline: float | None, size: int) -> bytes:
    """Up to ``limit`` bytes; ContainmentError when the deadline passes first.

    ``size`` (what ``fstat`` said) sizes the first read: a small file costs no megabyte-sized
    buffer. A short read is the end as a rule, confirmed by asking for one byte more (a file
    that grew meanwhile is read on as before).
    """
    chunks: list[bytes] = []
    remaining = limit
    want = min(READ_CHUNK, size + 1)
    while remaining > 0:
        if deadline is not None and time.monotonic() > deadline:
            raise ContainmentError(rel, "reading took too long")
        try:
            block = os.read(fd, min(want, remaining))
        except BlockingIOError:
            raise ContainmentError(rel, "the file would block") from None
        if not block:
            break
        chunks.append(block)
        remaining -= len(block)
        want = READ_CHUNK if len(block) == want else 1
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def read_contained(
    root: Path,
    rel: str,
    max_bytes: int,
    *,
    prefix: bool = False,
    deadline_s: float | None = None,
    resolved: bool = False,
) -> FileBytes:
    """Read pack file ``rel`` under the containment rule (see the module docstring).

    Whole file: a file over ``max_bytes`` raises FileTooLargeError. ``prefix=True``: only its
    first ``max_bytes`` bytes are read (reconstruct needs no more than the indexed span).
    Refusals raise ContainmentError; the disk's own errors (permissions, …) raise OSError.
    ``resolved``: ``root`` is a real path already (a pack load resolves it once, not per file).
    """
    base = root if resolved else real_root(root)
    try:  # no symlink on the way (the usual case): the path is its own real path
        if not _AT_SUPPORTED:  # pragma: no cover - one open that follows links: check first
            raise OSError(errno.ELOOP, "no openat here")
        fd = _open_beneath(base, pack_parts(rel))
    except OSError:  # a link (refused by O_NOFOLLOW), or missing: resolve, check, name why
        real = contained_path(root, rel)
        fd = _open_beneath(base, real.relative_to(base).parts)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ContainmentError(rel, "not a regular file")
        if not prefix and st.st_size > max_bytes:
            raise FileTooLargeError(rel, st.st_size, max_bytes)
        deadline = None if deadline_s is None else time.monotonic() + deadline_s
        limit = max_bytes if prefix else max_bytes + 1
        data = _read_fd(fd, rel, limit, deadline, st.st_size)
    finally:
        os.close(fd)
    if not prefix and len(data) > max_bytes:  # grew between fstat and read
        raise FileTooLargeError(rel, len(data), max_bytes)
    return FileBytes(data, st.st_size, st.st_mtime_ns)


def read_live_prefix(root: Path | None, rel: str, length: int) -> tuple[bytes | None, str | None]:
    """The first ``length`` bytes of a served file, for reconstruct's stale check.

    Never blocks and never raises: ``(bytes, None)``, or ``(None, why)`` when the file is gone,
    refused by the containment rule (a FIFO, a link out, …), unreadable or too slow.
    """
    if root is None:
        return None, "the pack folder is not known"
    try:
        got = read_contained(
            root, rel, max(0, length), prefix=True, deadline_s=LIVE_READ_DEADLINE_S
        )
    except ContainmentError as exc:
        return None, exc.reason
    except OSError as exc:
        return None, exc.strerror or type(exc).__name__
    return got.data, None
