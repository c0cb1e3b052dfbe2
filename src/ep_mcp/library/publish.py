"""Publish a pack's index as an artifact (`ep-mcp index PACK --out DIR`), and check one.

The pack's files are copied into a staging folder, indexed there (seeded with the current
version's index, so unchanged files are not embedded again), the database is turned into one
self-contained file, the manifest is written, and the folder is promoted: renamed to its
version and pointed at by ``current`` (see `ep_mcp.index.artifact` for the layout).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import shutil
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ep_mcp import __version__
from ep_mcp.config.model import IndexEngine, PackSettings, Settings
from ep_mcp.hub.git import Git
from ep_mcp.index import artifact
from ep_mcp.index.artifact import ArtifactError, Manifest
from ep_mcp.index.embed.factory import make_embedder
from ep_mcp.index.placement import OWNER_KEY
from ep_mcp.packs import gitfiles
from ep_mcp.packs.loader import load_pack
from ep_mcp.retrieval.types import SearchRequest

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Published:
    """What `publish` did: the version now current, and whether it is new."""

    slug: str
    version_dir: Path
    manifest: Manifest
    unchanged: bool  # the current version already holds this content and these settings
    seconds: float
    removed: tuple[Path, ...] = ()
    warnings: tuple[str, ...] = ()


def build_key(settings: Settings, cfg: PackSettings) -> dict[str, Any]:
    """The settings that change what an artifact holds; equal keys + equal content = no-op."""

    return {
        "ep_mcp_version": __version__,
        "kind": cfg.kind,
        "embedding": {
            "provider": settings.embedding.provider,
            "model": settings.embedding.model,
            "dimension": settings.embedding.dimension,
        },
        "index": {
            "max_tokens": settings.index.max_tokens,
            "context_prefix_template": settings.index.context_prefix_template,
            "max_file_bytes": settings.index.max_file_bytes,
            "embed_windows": settings.index.embed_windows,
            "window_overlap": settings.index.window_overlap,
        },
    }


def git_commit(root: Path, env: Mapping[str, str]) -> str | None:
    """The pack's commit when it is a clean git checkout (else None: the content hash rules).

    git never runs in the pack: HEAD is read as files and the clean check runs against a
    private git folder (``Git.is_clean``), so nothing the pack's ``.git`` configures executes.
    """

    found = gitfiles.git_dir(root)
    if found is None:
        return None
    top, gitdir = found
    commit = gitfiles.head_commit(gitdir)
    if commit is None:
        return None
    return commit if Git(env).is_clean(top, gitdir, commit, root) else None


def _finish_database(index: Path) -> None:
    """One file, no WAL: readers then need no write access anywhere (read-only volumes)."""
    import apsw

    conn = apsw.Connection(str(index))
    try:
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("VACUUM")
    finally:
        conn.close()
    for suffix in ("-wal", "-shm", ".damaged"):
        with contextlib.suppress(FileNotFoundError):
            Path(str(index) + suffix).unlink()


def _forget_owner(index: Path) -> None:
    """A seed copied from the current version names the staging folder it was built in as
    its owner; the new build claims it for its own staging folder."""
    import apsw

    conn = apsw.Connection(str(index))
    try:
        conn.execute("DELETE FROM meta WHERE key=?", (OWNER_KEY,))
    except apsw.Error:
        pass  # not an index we know: the build says so
    finally:
        conn.close()


def publish(
    settings: Settings,
    env: Mapping[str, str],
    out: Path,
    *,
    keep: int = 3,
    force: bool = False,
    show_progress: bool | None = None,
) -> Published:
    """Build the one pack of ``settings`` into ``out/<slug>/<version>`` and make it current."""

    started = time.perf_counter()
    cfg = settings.packs[0]
    source = load_pack(
        cfg.path, kind=cfg.kind, slug=cfg.slug, max_file_bytes=settings.index.max_file_bytes
    )
    slug = source.slug
    pack_dir = out / slug
    pack_dir.mkdir(parents=True, exist_ok=True)
    staging = pack_dir / f"{artifact.STAGING_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    try:
        skipped = artifact.snapshot(cfg.path, staging / artifact.SNAPSHOT)
        content, files = artifact.tree_hash(staging / artifact.SNAPSHOT)
        key = build_key(settings, cfg)
        current = artifact.current_version(pack_dir)
        previous = _usable(current)
        if previous is not None and current is not None:
            if not force and (previous.content_hash, previous.build_key) == (content, key):
                shutil.rmtree(staging, ignore_errors=True)
                return Published(slug, current, previous, True, time.perf_counter() - started)
            # unchanged files keep their vectors
            shutil.copyfile(current / artifact.INDEX, staging / artifact.INDEX)
            _forget_owner(staging / artifact.INDEX)
        chunks, features, warnings = _build(settings, env, cfg, slug, staging, show_progress)
        index = staging / artifact.INDEX
        _finish_database(index)
        now = time.time_ns()
        built_at = time.gmtime(now // 1_000_000_000)
        micros = (now // 1000) % 1_000_000  # names sort in build order, even within a second
        version = f"{time.strftime('%Y%m%dT%H%M%S', built_at)}.{micros:06d}Z-{content[7:19]}"
        if (pack_dir / version).exists():  # same second, same content, other settings
            version += f"-{uuid.uuid4().hex[:6]}"
        manifest = Manifest(
            slug=slug,
            version=version,
            built_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", built_at),
            ep_mcp_version=__version__,
            content_hash=content,
            files=files,
            git_commit=git_commit(cfg.path, env),
            index_sha256=artifact.file_sha256(index),
            index_bytes=index.stat().st_size,
            schema_version=artifact.schema_version(index),
            features=features,
            chunks=chunks,
            build_key=key,
        )
        artifact.write_manifest(staging, manifest)
        artifact.fsync_dir(staging)
        final = artifact.promote(staging, pack_dir, version)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    removed = artifact.prune(pack_dir, keep)
    return Published(
        slug,
        final,
        manifest,
        False,
        time.perf_counter() - started,
        tuple(removed),
        (*skipped, *warnings),
    )


def _usable(version_dir: Path | None) -> Manifest | None:
    if version_dir is None:
        return None
    try:
        return artifact.read_manifest(version_dir)
    except ArtifactError as exc:
        logger.warning("the current artifact is not usable (%s) — building afresh", exc)
        return None


def _build(
    settings: Settings,
    env: Mapping[str, str],
    cfg: PackSettings,
    slug: str,
    staging: Path,
    show_progress: bool | None,
) -> tuple[int, dict[str, Any], list[str]]:
    """Index the snapshot in ``staging``; query once so the file profiles' vectors are cached
    in the index (replicas open it read-only and would embed them on every start)."""
    from ep_mcp.library.runtime import (
        PackRuntime,  # start-up time: numpy; check_location needs none
    )

    assert settings.home is not None
    local = dataclasses.replace(
        cfg,
        path=staging / artifact.SNAPSHOT,
        slug=slug,
        index_dir=staging,
        read_only=False,
        artifact=None,
    )
    embedder = make_embedder(settings)
    built = dataclasses.replace(settings.index, engine=IndexEngine.SQLITE)  # the build format
    rt = PackRuntime(local, dataclasses.replace(settings, index=built), embedder, settings.home)
    try:
        report = rt.index(show_progress=show_progress, reload=False)
        if report.pending:
            raise ArtifactError(
                f"pack '{slug}': {report.pending} chunk(s) have no vector "
                f"({report.embedding_error}) — an artifact is published complete or not at "
                "all; fix the embedding provider and run again"
            )
        if embedder is not None:
            rt.search(SearchRequest(query="warm up", k=1))
        return report.chunks, rt.store.features(), [str(w) for w in rt.pack.warnings]
    finally:
        rt.close()


def check_location(location: Path) -> list[Manifest]:
    """Verify every artifact `ep_mcp.index.artifact.targets` finds at ``location``; a version
    inside a pack's artifact folder (one with ``current``) must be a version of that pack."""
    found = []
    for version in artifact.targets(location):
        manifest = artifact.check(version)
        folder = version.parent
        if os.path.lexists(folder / artifact.CURRENT):
            artifact.owned_by(manifest, version, {folder.name})
        found.append(manifest)
    return found
