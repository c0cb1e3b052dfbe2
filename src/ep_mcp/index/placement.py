"""Where an index may be opened: no link on the way, regular files only, and whose it is.

An index location is ep-mcp's, never the pack's: a pack folder may bring ``.ep-mcp`` (or
``.ep-mcp/index.db``, or its ``-wal``) as a symbolic link into another pack's index, or a FIFO
where the file should be. So, as ``packs.safeopen`` does for pack files:

- the folders below a trusted base (the pack root, ``index_dir``, the per-user home — each
  resolved once, as the operator gave it) are opened one by one with ``O_NOFOLLOW``
  (``openat``): a link below the base is reported, never followed;
- the index file and every file SQLite or ep-mcp creates beside it (``-wal``, ``-shm``,
  ``-journal``, ``.damaged``) must be absent or regular files (``lstat``): a FIFO, socket,
  device or directory is refused at once, before anything opens it;
- the index records its owner (`Owner`: the pack's slug, and its root's real path and
  device + inode) in its ``meta`` table, and an index is opened only for its owner.

SQLite opens by path, so between these checks and its own ``open`` a local process that can
write the folder could swap a segment for a link. SQLite is then asked to follow none
(``SQLITE_OPEN_NOFOLLOW``: every segment is checked again, and the file opened ``O_NOFOLLOW``);
what remains is the window between SQLite's own check and its open, open only to someone who
can already write the index folder.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ep_mcp.errors import IndexBuildError

SIBLINGS = ("-wal", "-shm", "-journal", ".damaged")
OWNER_KEY = "pack_owner"

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_DIR_FLAGS = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC


class IndexPlacementError(IndexBuildError):
    """Something that is not a regular index file where an index should be, or another
    pack's index: refused before it is opened."""


class LinkedLocation(IndexPlacementError):
    """A symbolic link (or a non-folder) on the way to an index: the location is not ours."""


def kind_of(mode: int) -> str:
    """What a file is, in words, for a message."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def not_a_file(path: Path, mode: int) -> IndexPlacementError:
    return IndexPlacementError(
        f"{path} is {kind_of(mode)}, not an index file — ep-mcp opens only regular files "
        "there; remove it and run `ep-mcp index PACK`"
    )


def check_leaf(path: Path) -> None:
    """The index file and its siblings: absent or regular files (``lstat``, nothing opened)."""
    for candidate in (path, *(path.with_name(path.name + s) for s in SIBLINGS)):
        try:
            st = os.lstat(candidate)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise IndexPlacementError(
                f"cannot look at {candidate}: {exc.strerror or exc} — check the folder"
            ) from None
        if stat.S_ISLNK(st.st_mode):
            raise LinkedLocation(
                f"{candidate} is a symbolic link, and an index is never opened through one"
            )
        if not stat.S_ISREG(st.st_mode):
            raise not_a_file(candidate, st.st_mode)


def beneath(base: Path, parts: tuple[str, ...], *, create: bool) -> Path:
    """``base/parts…`` (the last part the index file), every folder below ``base`` reached
    without following a link (``openat`` + ``O_NOFOLLOW``) and made when ``create``; the
    file and its siblings checked by `check_leaf`. ``base`` itself is the caller's (resolved
    once). Returns the link-free real path. Raises `LinkedLocation` or `IndexPlacementError`."""
    real = Path(os.path.realpath(base))
    if create:
        real.mkdir(parents=True, exist_ok=True)
    path = real.joinpath(*parts)
    try:
        fd = os.open(real, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    except FileNotFoundError:
        return path  # nothing there yet (a read-only open says "no index")
    except OSError as exc:
        raise IndexPlacementError(f"cannot open {real}: {exc.strerror or exc}") from None
    here = real
    try:
        for name in parts[:-1]:
            here = here / name
            try:
                next_fd = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    return path
                os.mkdir(name, 0o755, dir_fd=fd)  # never follows a link at `name`
                next_fd = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise IndexPlacementError(f"cannot open {here}: {exc.strerror}") from None
                mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
                raise LinkedLocation(
                    f"{here} is {kind_of(mode)}, not a folder of ep-mcp's — not followed"
                ) from None
            os.close(fd)
            fd = next_fd
    finally:
        os.close(fd)
    check_leaf(path)
    return path


@dataclass(frozen=True)
class Owner:
    """The pack an index belongs to: its slug, and its root's real path and device + inode.

    Either half of the root's identity names the same pack: the path survives a folder that is
    replaced (a fresh clone), the inode one that is moved or renamed (its ``.ep-mcp`` moves
    with it). Another pack's index differs in both."""

    slug: str
    root: str
    dev: int
    ino: int

    @classmethod
    def of(cls, slug: str, root: Path) -> Owner:
        real = os.path.realpath(root)
        st = os.stat(real)
        return cls(slug, real, st.st_dev, st.st_ino)

    def same_root(self, other: Owner) -> bool:
        return self.root == other.root or (self.dev, self.ino) == (other.dev, other.ino)

    def describe(self) -> str:
        return f"'{self.slug}' ({self.root})"

    def to_json(self) -> str:
        return json.dumps({"slug": self.slug, "root": self.root, "dev": self.dev, "ino": self.ino})


def recorded_owner(store: Any) -> Owner | None:
    """The owner an index records (None: an index older than owners, or a fresh one)."""
    return parse_owner(store.get_meta(OWNER_KEY))


def parse_owner(raw: str | None) -> Owner | None:
    if not raw:
        return None
    try:
        data = json.loads(raw)
        return Owner(str(data["slug"]), str(data["root"]), int(data["dev"]), int(data["ino"]))
    except (ValueError, TypeError, KeyError):
        return None  # a damaged record: claimed again by the next writable open


def record_owner(store: Any, owner: Owner) -> None:
    with store.transaction():
        store.set_meta(OWNER_KEY, owner.to_json())


def foreign(path: Path, found: Owner, wanted: Owner) -> str:
    """The one line naming both packs."""
    return f"index at {path} belongs to pack {found.describe()}, not to {wanted.describe()}"
