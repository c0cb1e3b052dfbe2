"""Where a pack's index lives: in the pack, or in a per-user data directory."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path


def _writable(folder: Path) -> bool:
    """Writable for real: permission bits say so (root ignores them) and access agrees."""
    try:
        mode = folder.stat().st_mode
    except OSError:
        return False
    return bool(mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)) and os.access(folder, os.W_OK)


def index_path(pack_root: Path, slug: str, index_dir: Path | None, home: Path) -> Path:
    """`index_dir/index.db`, else `<pack>/.ep-mcp/index.db`, else the per-user data directory.

    Packs shipped inside the ep_mcp package (the bundled example) always index into the
    per-user directory, so an install never writes into site-packages.
    """
    if index_dir is not None:
        return index_dir / "index.db"
    local = pack_root / ".ep-mcp"
    inside_package = Path(__file__).resolve().parents[1] in pack_root.resolve().parents
    if not inside_package and (
        ((local / "index.db").exists() and _writable(local)) or _writable(pack_root)
    ):
        return local / "index.db"
    key = hashlib.sha256(str(pack_root.resolve()).encode("utf-8", "surrogatepass")).hexdigest()
    return home / "indexes" / f"{slug}-{key[:12]}" / "index.db"


def existing_index(pack_root: Path, index_dir: Path | None, home: Path) -> Path | None:
    """The index `index_path` would pick for this pack, if one exists — found without the slug.

    Used by the no-change fast path, which must not parse the pack (the slug lives in its
    manifest). None when there is no index yet or the per-user folder is ambiguous.
    """
    if index_dir is not None:
        found = index_dir / "index.db"
        return found if found.exists() else None
    local = pack_root / ".ep-mcp" / "index.db"
    if local.exists() and _writable(local.parent):
        return local
    if _writable(pack_root):
        return None
    key = hashlib.sha256(str(pack_root.resolve()).encode("utf-8", "surrogatepass")).hexdigest()
    matches = list((home / "indexes").glob(f"*-{key[:12]}/index.db"))
    return matches[0] if len(matches) == 1 else None
