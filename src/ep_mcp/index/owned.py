"""Opening a pack's index only for that pack: its location placed, its owner checked.

`open_owned` is what a `PackRuntime` opens. The rules (docs/server.md, "What a pack may
bring"):

- the location is `locate.place_index`'s (a pack's ``.ep-mcp`` link is not followed);
- an index records its `placement.Owner`; a writable index belongs to the pack whose root it
  names (real path, or device + inode), a read-only one (built elsewhere) to the pack whose
  slug it names. An artifact is identified by its manifest instead (``index.artifact``);
- another pack's index found in the pack's own folder is left alone: this pack's index lives
  in the per-user data directory (one warning naming both). What a user expects there is
  their pack served — the foreign file is a copy (``cp -r``) or a plant, not their index;
- another pack's index at a configured ``index_dir``, or served read-only, is refused with one
  line naming both: the operator chose that location, so it is theirs to fix;
- a writable index with no owner yet (a fresh one, or one written before owners) is claimed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from ep_mcp.config.model import PackSettings
from ep_mcp.index.locate import Placement, home_index, place_index
from ep_mcp.index.placement import (
    OWNER_KEY,
    IndexPlacementError,
    Owner,
    foreign,
    parse_owner,
    record_owner,
    recorded_owner,
)
from ep_mcp.index.schema import peek_meta
from ep_mcp.index.store import Store

logger = logging.getLogger(__name__)


def owner_in(path: Path) -> Owner | None:
    """The owner the index file at ``path`` records, read without opening it for writing."""
    return parse_owner(peek_meta(path, OWNER_KEY))


def belongs(found: Owner, owner: Owner, read_only: bool) -> bool:
    return found.slug == owner.slug if read_only else found.same_root(owner)


def _elsewhere(
    where: Placement, found: Owner, owner: Owner, read_only: bool, root: Path, home: Path
) -> Path:
    """Where this pack's index goes when another pack's index is at its place: the per-user
    folder when the foreign one sits in the pack's own folder, else a refusal naming both."""
    line = foreign(where.path, found, owner)
    if where.where != "pack" or read_only:
        raise IndexPlacementError(
            f"{line} — give each pack its own index_dir, or delete that index"
        )
    path = home_index(root, owner.slug, home, create=True)
    logger.warning("pack %s: %s — its index lives in %s instead", owner.slug, line, path)
    return path


def open_owned(
    root: Path, slug: str, cfg: PackSettings, home: Path, open_store: Callable[[Path], Store]
) -> Store:
    """The index of the pack at ``root`` (``open_store`` opens a path: recovery included)."""
    read_only = cfg.read_only
    where = place_index(root, slug, cfg.index_dir, home, create=not read_only)
    if where.moved is not None:
        logger.warning("pack %s: %s — its index lives in %s instead", slug, where.moved, where.path)
    if cfg.artifact is not None:
        return open_store(where.path)
    owner, path = Owner.of(slug, root), where.path
    early = owner_in(path)  # read before an open can rebuild it: never for another pack
    if early is not None and not belongs(early, owner, read_only):
        path = _elsewhere(where, early, owner, read_only, root, home)
    store = open_store(path)
    try:
        found = recorded_owner(store)
        if found is not None and not belongs(found, owner, read_only):
            if path != where.path:
                raise IndexPlacementError(foreign(path, found, owner))
            store.close()
            path = _elsewhere(where, found, owner, read_only, root, home)
            store = open_store(path)
            found = recorded_owner(store)
            if found is not None and not belongs(found, owner, read_only):
                raise IndexPlacementError(foreign(path, found, owner))
        if not read_only and found != owner:
            record_owner(store, owner)
    except BaseException:
        store.close()
        raise
    return store
