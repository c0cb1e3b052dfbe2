"""Where a pack's index lives: `index_dir`, in the pack, or in a per-user data directory.

The location is ep-mcp's choice, never the pack's: a pack folder that brings its own
``.ep-mcp`` as a link (or a file, or with a linked ``index.db``) is not followed — its index
goes to the per-user data directory instead, with a warning (`Placement.moved`). Every
location is reached by `placement.beneath` (no link below its base, regular files only).
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ep_mcp.index.placement import IndexPlacementError, LinkedLocation, beneath, kind_of

INDEX = "index.db"
LOCAL = ".ep-mcp"


@dataclass(frozen=True)
class Placement:
    """An index location: its link-free path, which of the three it is, and why the pack's
    own folder was passed over (None when it was not)."""

    path: Path
    where: Literal["configured", "pack", "home"]
    moved: str | None = None


def _writable(folder: Path) -> bool:
    """Writable for real: permission bits say so (root ignores them) and access agrees."""
    try:
        mode = folder.stat().st_mode
    except OSError:
        return False
    return bool(mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)) and os.access(folder, os.W_OK)


def _root_key(root: Path) -> str:
    return hashlib.sha256(str(root).encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _local_refused(root: Path) -> str | None:
    """Why ``<pack>/.ep-mcp`` may not hold the index (a link, a file…), None when it may."""
    try:
        mode = os.lstat(root / LOCAL).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{root / LOCAL}: {exc.strerror or exc}"
    if stat.S_ISDIR(mode):
        return None
    return f"{root / LOCAL} is {kind_of(mode)}, not a folder of ep-mcp's — not followed"


def _lexists(path: Path) -> bool:
    return os.path.lexists(path)


def home_index(pack_root: Path, slug: str, home: Path, *, create: bool) -> Path:
    """The per-user location of a pack's index (keyed by its slug and real root path)."""
    root = Path(os.path.realpath(pack_root))
    return beneath(home, ("indexes", f"{slug}-{_root_key(root)}", INDEX), create=create)


def place_index(
    pack_root: Path, slug: str, index_dir: Path | None, home: Path, *, create: bool = True
) -> Placement:
    """`index_dir/index.db`, else `<pack>/.ep-mcp/index.db`, else the per-user data directory.

    Packs shipped inside the ep_mcp package (the bundled example) always index into the
    per-user directory, so an install never writes into site-packages. ``create``: make the
    missing folders (a writable open). Raises `IndexPlacementError` for a FIFO, device or
    directory where the index file should be, and for a link below `index_dir` or the home.
    """
    if index_dir is not None:
        try:
            return Placement(beneath(index_dir, (INDEX,), create=create), "configured")
        except LinkedLocation as exc:
            raise IndexPlacementError(
                f"{exc} — remove it, or give the pack an index_dir of its own"
            ) from None
    root = Path(os.path.realpath(pack_root))
    moved: str | None = None
    inside_package = Path(__file__).resolve().parents[1] in root.parents
    if not inside_package:
        moved = _local_refused(root)
        local = root / LOCAL
        if moved is None and ((_lexists(local / INDEX) and _writable(local)) or _writable(root)):
            try:
                return Placement(beneath(root, (LOCAL, INDEX), create=create), "pack")
            except LinkedLocation as exc:
                moved = str(exc)
    return Placement(home_index(root, slug, home, create=create), "home", moved)


def index_path(pack_root: Path, slug: str, index_dir: Path | None, home: Path) -> Path:
    """The path `place_index` picks (folders made as needed)."""
    return place_index(pack_root, slug, index_dir, home).path


def existing_index(pack_root: Path, index_dir: Path | None, home: Path) -> Path | None:
    """The index `place_index` would pick for this pack, if one exists — found without the
    slug.

    Used by the no-change fast path, which must not parse the pack (the slug lives in its
    manifest). None when there is no index yet, the per-user folder is ambiguous, or the
    location is refused (the normal path then says why).
    """
    try:
        if index_dir is not None:
            found = beneath(index_dir, (INDEX,), create=False)
            return found if found.exists() else None
        root = Path(os.path.realpath(pack_root))
        if _local_refused(root) is None:
            local = root / LOCAL / INDEX
            try:
                if _lexists(local) and _writable(local.parent):
                    return beneath(root, (LOCAL, INDEX), create=False)
                if _writable(root):
                    return None
            except LinkedLocation:
                pass  # a linked index.db: the per-user folder holds this pack's index
        matches = list((home / "indexes").glob(f"*-{_root_key(root)}/{INDEX}"))
        return beneath(matches[0].parent, (INDEX,), create=False) if len(matches) == 1 else None
    except IndexPlacementError:
        return None
