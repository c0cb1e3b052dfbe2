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
        (local / "index.db").exists() and _writable(local) or _writable(pack_root)
    ):
        return local / "index.db"
    key = hashlib.sha256(str(pack_root.resolve()).encode("utf-8", "surrogatepass")).hexdigest()
    return home / "indexes" / f"{slug}-{key[:12]}" / "index.db"
