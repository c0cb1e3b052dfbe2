"""An index as a build artifact: a versioned folder per pack, published by one atomic rename.

Layout (``ep-mcp index PACK --out ROOT``)::

    ROOT/<slug>/
        current -> 20260101T120000.000042Z-1a2b3c4d5e6f  (a relative symlink, swapped atomically)
        20260101T120000.000042Z-1a2b3c4d5e6f/     (UTC build time, content hash)
            manifest.json                               (what this is; see `Manifest`)
            index.db                                    (SQLite, rollback journal: one file)
            pack/                                       (the pack's files the index was built from)

A version folder is complete before it gets its name (it is staged as ``.staging-*`` beside it)
and is never written again, so a reader may open it read-only — or from read-only media —
without locks on anything but the database file. ``current`` is replaced with ``os.replace``
of a fresh symlink: a reader sees the old version or the new one, never a mix. The pack's
files travel with the index, so a replica needs nothing but this folder.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ep_mcp.config.model import PackSettings
from ep_mcp.index.embed.optimize import sha256_file
from ep_mcp.index.manifest import (
    ARTIFACT_FORMAT,
    MANIFEST,
    ArtifactError,
    Manifest,
    read_manifest,
    write_manifest,
)
from ep_mcp.index.schema import MIGRATIONS

__all__ = [
    "ARTIFACT_FORMAT",
    "MANIFEST",
    "ArtifactError",
    "Manifest",
    "read_manifest",
    "write_manifest",
]

INDEX = "index.db"
SNAPSHOT = "pack"
CURRENT = "current"
STAGING_PREFIX = ".staging-"
SKIPPED_DIRS = frozenset({".ep-mcp", ".git", "__pycache__", "node_modules"})


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file (the one reader of files' digests: ``embed.optimize``'s)."""
    return sha256_file(path)


def _walk(root: Path) -> Iterator[Path]:
    """Regular files under ``root`` (symlinks and skipped folders left out), sorted."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
        base = Path(dirpath)
        for name in sorted(filenames):
            path = base / name
            if path.is_file() and not path.is_symlink():
                yield path


def tree_hash(root: Path) -> tuple[str, int]:
    """``sha256:<hex>`` over every file's relative path and bytes, and the file count."""
    digest = hashlib.sha256()
    count = 0
    for path in _walk(root):
        rel = path.relative_to(root).as_posix()
        digest.update(f"{rel}\0{file_sha256(path)}\n".encode("utf-8", "surrogatepass"))
        count += 1
    return f"sha256:{digest.hexdigest()}", count


def snapshot(source: Path, dest: Path) -> list[str]:
    """Copy the pack's regular files into ``dest``; returns what was left out and why.

    Symbolic links are not followed (a link could lead out of the pack), nor are the index,
    git or cache folders copied.
    """
    skipped: list[str] = []
    for dirpath, dirnames, filenames in os.walk(source):
        dirnames[:] = [d for d in dirnames if d not in SKIPPED_DIRS]
        base = Path(dirpath)
        for name in [*dirnames, *filenames]:
            if (base / name).is_symlink():
                skipped.append(f"{(base / name).relative_to(source)}: symbolic link, not copied")
        dirnames[:] = [d for d in dirnames if not (base / d).is_symlink()]
    for path in _walk(source):
        target = dest / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    return skipped


def current_version(pack_dir: Path) -> Path | None:
    """The version folder ``pack_dir/current`` points at, or None when nothing is published."""
    link = pack_dir / CURRENT
    try:
        target = os.readlink(link)
    except FileNotFoundError:
        return None
    except OSError:  # not a symlink: a pointer file holding the version name
        try:
            target = link.read_text(encoding="utf-8").strip()
        except OSError:
            return None
    if not target or "/" in target or target.startswith("."):
        raise ArtifactError(f"{link} points at {target!r} — expected a version folder name")
    return pack_dir / target


def versions(pack_dir: Path) -> list[Path]:
    """Published version folders, oldest first (names start with their UTC build time)."""
    if not pack_dir.is_dir():
        return []
    return sorted(
        p
        for p in pack_dir.iterdir()
        if p.is_dir() and not p.is_symlink() and not p.name.startswith(".")
    )


def pack_folder(location: Path, slug: str | None = None) -> Path:
    """The artifact folder of one pack: ``location`` itself when it holds ``current``, else
    ``location/<slug>`` (``location`` is then the ``--out`` root)."""
    if os.path.lexists(location / CURRENT) or slug is None:  # a broken `current` too
        return location
    return location / slug


def fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def promote(staging: Path, pack_dir: Path, version: str) -> Path:
    """Name the complete ``staging`` folder ``version`` and point ``current`` at it."""
    final = pack_dir / version
    os.rename(staging, final)  # same folder: atomic; fails if the name is taken
    tmp_link = pack_dir / f".{CURRENT}-{os.getpid()}"
    with contextlib.suppress(FileNotFoundError):
        tmp_link.unlink()
    os.symlink(version, tmp_link)
    os.replace(tmp_link, pack_dir / CURRENT)
    fsync_dir(pack_dir)
    return final


def prune(pack_dir: Path, keep: int) -> list[Path]:
    """Delete all but the newest ``keep`` versions (never the current one) and stale staging
    folders of dead builds; returns what was removed. Replicas still serving an old version
    keep their open files: on POSIX a removed file lives until it is closed."""
    current = current_version(pack_dir)
    old = versions(pack_dir)[:-keep] if keep > 0 else []
    removed = [p for p in old if current is None or p.name != current.name]
    for path in removed:
        shutil.rmtree(path, ignore_errors=True)
    for path in pack_dir.glob(STAGING_PREFIX + "*"):
        pid = path.name[len(STAGING_PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def schema_version(index: Path) -> int:
    import apsw

    try:
        conn = apsw.Connection(f"file:{index}?immutable=1", flags=_RO_URI)
        try:
            return int(str(conn.execute("PRAGMA user_version").fetchall()[0][0]))
        finally:
            conn.close()
    except apsw.Error as exc:
        raise ArtifactError(f"{index}: not a readable SQLite database ({exc})") from None


_RO_URI = 0x00000001 | 0x00000040  # SQLITE_OPEN_READONLY | SQLITE_OPEN_URI


def known_schema() -> int:
    """The newest index schema this ep-mcp reads and writes (its number of migrations)."""

    return len(MIGRATIONS)


def check(version_dir: Path) -> Manifest:
    """Verify one version folder: manifest fields, index checksum and size, schema version,
    the features the index records, every stored vector and later embedding window
    (``vector_damage``), and the pack snapshot's hash. Raises `ArtifactError`.
    Nothing in it may be a link (a version folder linked to another pack's, an index.db or
    pack/ leading out): an artifact brings files, not places."""
    no_links(version_dir)
    manifest = read_manifest(version_dir)
    index = version_dir / INDEX
    if not index.is_file():
        raise ArtifactError(f"{version_dir}: {INDEX} is missing")
    if manifest.version != version_dir.name:
        raise ArtifactError(
            f"{version_dir}: the manifest names version {manifest.version!r}, "
            "the folder another — do not rename version folders"
        )
    size = index.stat().st_size
    if size != manifest.index_bytes:
        raise ArtifactError(
            f"{index}: {size} bytes, the manifest says {manifest.index_bytes} — "
            "the copy is incomplete or was changed; publish it again"
        )
    if file_sha256(index) != manifest.index_sha256:
        raise ArtifactError(
            f"{index}: checksum does not match the manifest — the file is damaged or was "
            "changed; publish it again"
        )
    found = schema_version(index)
    if found != manifest.schema_version:
        raise ArtifactError(f"{index}: schema {found}, the manifest says {manifest.schema_version}")
    if found > known_schema():
        raise ArtifactError(
            f"{index}: schema {found} is newer than this ep-mcp reads ({known_schema()}) — "
            "upgrade ep-mcp"
        )
    features = index_features(index)
    if features != dict(manifest.features):
        raise ArtifactError(f"{index}: index features differ from the manifest's")
    damage = vector_damage(index, features)
    if damage:
        raise ArtifactError(
            f"{index}: damaged embedding windows or vectors ({'; '.join(damage)}) — "
            "build the pack again and publish it"
        )
    snap = version_dir / SNAPSHOT
    if not snap.is_dir():
        raise ArtifactError(f"{version_dir}: the pack snapshot folder '{SNAPSHOT}/' is missing")
    content, files = tree_hash(snap)
    if (content, files) != (manifest.content_hash, manifest.files):
        raise ArtifactError(
            f"{snap}: the pack files differ from the manifest's content hash — publish again"
        )
    return manifest


def no_links(version_dir: Path) -> None:
    """The version folder and what `check` reads in it are what they claim, not links."""
    for path, want in (
        (version_dir, stat.S_ISDIR),
        (version_dir / MANIFEST, stat.S_ISREG),
        (version_dir / INDEX, stat.S_ISREG),
        (version_dir / SNAPSHOT, stat.S_ISDIR),
    ):
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            continue  # `check` names what is missing
        if stat.S_ISLNK(mode):
            raise ArtifactError(
                f"{path} is a symbolic link — an artifact version is served only from its own "
                "files; publish it again with `ep-mcp index PACK --out DIR`"
            )
        if not want(mode):
            raise ArtifactError(f"{path} is not a {'folder' if want is stat.S_ISDIR else 'file'}")


def owned_by(manifest: Manifest, version_dir: Path, slugs: set[str]) -> None:
    """A version is served from (or checked in) an artifact folder only when it is a version
    of that folder's pack: its manifest's slug is one of ``slugs`` (the folder's name, as
    `--out` writes it, and the configured or serving slug)."""
    if manifest.slug not in slugs:
        wanted = " or ".join(f"'{s}'" for s in sorted(slugs))
        raise ArtifactError(
            f"{version_dir.name} is a version of pack '{manifest.slug}', not of {wanted} — "
            f"it was copied into the wrong folder ({version_dir.parent}); move it to the "
            f"folder of '{manifest.slug}'"
        )


def vector_damage(index: Path, features: dict[str, Any]) -> list[str]:
    """What is wrong with ``index``'s vectors and later embedding windows as PostgreSQL serves
    them (``vectorcheck.serving_damage``), one phrase each; nothing when whole. The one check
    before a version is served or loaded: ``check`` and ``pgload.load_into_postgres`` call it.
    ArtifactError when the file cannot be read."""
    import apsw

    from ep_mcp.index.vectorcheck import serving_damage

    try:
        conn = apsw.Connection(f"file:{index}?immutable=1", flags=_RO_URI)
        try:
            return serving_damage(conn, features)
        finally:
            conn.close()
    except apsw.Error as exc:
        raise ArtifactError(f"{index}: cannot read the vectors ({exc})") from None


def index_features(index: Path) -> dict[str, Any]:
    import apsw

    try:
        conn = apsw.Connection(f"file:{index}?immutable=1", flags=_RO_URI)
        try:
            rows = conn.execute("SELECT value FROM meta WHERE key='index_features'").fetchall()
        finally:
            conn.close()
    except apsw.Error as exc:
        raise ArtifactError(f"{index}: cannot read the index metadata ({exc})") from None
    if not rows:
        raise ArtifactError(f"{index}: the index records no features — it was never finished")
    loaded = json.loads(str(rows[0][0]))
    return dict(loaded) if isinstance(loaded, dict) else {}


def targets(location: Path) -> list[Path]:
    """The version folders ``ep-mcp index --check`` looks at: a version folder itself, the
    current version of a pack's artifact folder, or that of every pack under an --out root."""
    if (location / MANIFEST).exists():
        return [location]
    current = current_version(location)
    if current is not None:
        return [current]
    if not location.is_dir():
        raise ArtifactError(f"{location}: no such folder — pass an artifact folder")
    found = [c for p in sorted(location.iterdir()) if (c := current_version(p)) is not None]
    if not found:
        raise ArtifactError(
            f"{location}: no artifact here (no {MANIFEST}, no '{CURRENT}' link) — "
            "publish one with `ep-mcp index PACK --out DIR`"
        )
    return found


def served_settings(cfg: PackSettings, version_dir: Path | None = None) -> PackSettings:
    """The settings that serve ``cfg.artifact``'s current version (or ``version_dir``),
    read-only, after `check` passed: its pack snapshot and its index."""
    assert cfg.artifact is not None
    folder = pack_folder(cfg.artifact, cfg.slug)
    version = version_dir or current_version(folder)
    if version is None:
        raise ArtifactError(
            f"{folder}: nothing is published there yet (no '{CURRENT}') — publish with "
            "`ep-mcp index PACK --out DIR` and point `artifact:` at DIR/<slug>"
        )
    manifest = check(version)
    owned_by(manifest, version, {folder.name} | ({cfg.slug} if cfg.slug else set()))
    return dataclasses.replace(
        cfg,
        path=version / SNAPSHOT,
        index_dir=version,
        read_only=True,
        slug=cfg.slug or manifest.slug,
    )


def served_version(cfg: PackSettings) -> str | None:
    """The artifact version a resolved pack entry serves (None for an ordinary pack)."""
    return cfg.index_dir.name if cfg.artifact is not None and cfg.index_dir else None
