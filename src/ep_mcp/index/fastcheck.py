"""The no-change fast path of `ep-mcp index`: compare file stats with the last build's snapshot.

Parsing a pack (YAML frontmatter, markdown) and importing numpy cost more than everything else a
no-change run does. So before any of that, the pack folder is walked and every file's (path,
size, mtime_ns, ctime_ns, inode) is hashed together with the settings that shape the index. If
the digest equals the one recorded after the last successful build, the index is current and the
build is skipped.

A file modified within ``RACY_NS`` before that snapshot is not trusted — a same-size edit inside one
timestamp tick would leave its stats unchanged — so such runs take the normal path (which hashes
every file) and record a fresh snapshot. Anything unexpected also means "take the normal path".
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw

from ep_mcp.errors import EpMcpError
from ep_mcp.index.locate import existing_index
from ep_mcp.index.placement import Owner, recorded_owner
from ep_mcp.index.schema import FORMAT_VERSION
from ep_mcp.index.store import Store

if TYPE_CHECKING:
    from ep_mcp.config.model import IndexSettings, PackSettings
    from ep_mcp.index.embed.base import EmbeddingSpec

logger = logging.getLogger(__name__)

RACY_NS = 2_000_000_000
SKIP_DIRS = frozenset({".ep-mcp", ".git", ".hg", ".svn", "__pycache__", "node_modules"})
META_KEY = "fast_state"


@dataclass(frozen=True)
class Snapshot:
    digest: str
    taken_ns: int  # wall clock when the walk started
    newest_mtime_ns: int  # the most recent file modification seen


@dataclass(frozen=True)
class QuickState:
    """What the last build recorded: enough to report without opening the pack."""

    index: Path
    slug: str
    report: Mapping[str, Any]
    warnings: tuple[str, ...]


def _walk(root: Path) -> Iterator[tuple[str, os.stat_result | None]]:
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        # a name never holds a separator: the relative path is the folder's and the name
        inner = os.path.relpath(folder, root)
        prefix = "" if inner == os.curdir else inner + os.sep
        for name in sorted(files):
            try:
                yield prefix + name, os.stat(os.path.join(folder, name))
            except OSError:
                yield prefix + name, None


def take_snapshot(root: Path, settings_key: Mapping[str, Any]) -> Snapshot:
    """Digest of the folder's file stats and the settings that shape the index."""
    taken = time.time_ns()
    digest = hashlib.sha256(json.dumps(settings_key, sort_keys=True, default=str).encode())
    newest = 0
    for rel, st in _walk(root):
        stats = "?" if st is None else f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"
        digest.update(f"{rel}\0{stats}\n".encode("utf-8", "surrogateescape"))
        if st is not None:
            newest = max(newest, st.st_mtime_ns)
    return Snapshot(digest.hexdigest(), taken, newest)


def settings_key(
    pack: PackSettings, embedding: EmbeddingSpec, index: IndexSettings, version: str
) -> dict[str, Any]:
    """The settings that change what an index holds (all frozen dataclasses)."""
    return {
        "version": version,
        "format": FORMAT_VERSION,
        "pack": {"path": str(pack.path), "slug": pack.slug, "kind": pack.kind},
        "embedding": dataclasses.asdict(embedding),
        "index": dataclasses.asdict(index),
    }


def quick_state(
    pack_root: Path, index_dir: Path | None, home: Path, snap: Snapshot
) -> QuickState | None:
    """The last build's record when nothing changed since it, else None (build normally)."""
    path = existing_index(pack_root, index_dir, home)
    if path is None:
        return None
    try:
        store = Store(path, read_only=True, vector_engine="numpy")
    except Exception as exc:  # a damaged or locked index: the normal path will say why
        logger.debug("fast path skipped: %s", exc)
        return None
    try:
        if store.repair_needed:  # damaged or missing rows: the build repairs them
            logger.debug("fast path skipped: %s", store.repair_needed)
            return None
        raw = store.get_meta(META_KEY)
        owner = recorded_owner(store)
        if owner is None or not owner.same_root(Owner.of(owner.slug, pack_root)):
            return None  # not (yet) recorded as this pack's: the normal path decides
    except (EpMcpError, apsw.Error, OSError) as exc:  # damage met past the open checks
        logger.debug("fast path skipped: %s", exc)
        return None
    finally:
        store.close()
    if not raw:  # none recorded, or forgotten
        return None
    try:
        state = json.loads(raw)
        if state.get("digest") != snap.digest:
            return None
        if snap.newest_mtime_ns >= int(state.get("taken_ns", 0)) - RACY_NS:
            return None  # a file changed too close to the snapshot to trust its stats
        return QuickState(path, str(state["slug"]), dict(state["report"]), tuple(state["warnings"]))
    except (ValueError, TypeError, KeyError, AttributeError) as exc:  # a damaged record
        logger.debug("fast path skipped, unreadable record: %s", exc)
        return None


def remember(
    store: Store, snap: Snapshot, slug: str, report: Mapping[str, Any], warnings: Sequence[str]
) -> None:
    """Record the snapshot a successful build started from."""
    state = {
        "digest": snap.digest,
        "taken_ns": snap.taken_ns,
        "slug": slug,
        "report": dict(report),
        "warnings": list(warnings),
    }
    with store.transaction():
        store.set_meta(META_KEY, json.dumps(state, default=str))


def forget(store: Store) -> None:
    """Drop the recorded snapshot, so the next run takes the normal path (e.g. chunks wait
    for their vectors)."""
    with store.transaction():
        store.set_meta(META_KEY, "")
