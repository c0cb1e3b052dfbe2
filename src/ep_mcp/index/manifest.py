"""An artifact's manifest: what one version holds and whose it is, read under bounds.

A manifest comes with the artifact folder, so it is data like any file a pack brings: it is
read only as a regular file (no link), at most ``MAX_MANIFEST_BYTES``, and JSON nested at most
``MAX_DEPTH`` deep (the format itself nests three); anything else is one `ArtifactError` line.
Whose it is: ``slug`` names the pack it was built from (every version of one pack carries the
same) and ``content_hash`` the pack files of this version (checked against its snapshot).
"""

from __future__ import annotations

import dataclasses
import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ep_mcp.errors import IndexBuildError

ARTIFACT_FORMAT = 1
MANIFEST = "manifest.json"
MAX_MANIFEST_BYTES = 1 << 20
MAX_DEPTH = 16


class ArtifactError(IndexBuildError):
    """An artifact folder that is missing, incomplete or does not match its manifest."""


@dataclass(frozen=True)
class Manifest:
    """What one artifact version holds; written as ``manifest.json`` beside the index."""

    slug: str
    version: str
    built_at: str  # UTC, ISO-8601
    ep_mcp_version: str
    content_hash: str  # sha256:<hex> over the pack snapshot (`tree_hash`)
    files: int  # files in the snapshot
    git_commit: str | None  # the pack's git commit when it is a clean checkout, else None
    index_sha256: str
    index_bytes: int
    schema_version: int  # the index's SQLite user_version (its migrations)
    features: Mapping[str, Any]  # the index's `index_features`: format, embedder, dimension...
    chunks: int
    build_key: Mapping[str, Any]  # settings that change what the index holds (rebuild check)
    artifact_format: int = ARTIFACT_FORMAT

    @property
    def model(self) -> str | None:
        value = self.features.get("embedder")
        return str(value) if value else None

    @property
    def dimension(self) -> int | None:
        value = self.features.get("dimension")
        return int(value) if isinstance(value, int) else None

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["model"], out["dimension"] = self.model, self.dimension
        return out


_FIELDS: dict[str, type | tuple[type, ...]] = {
    "artifact_format": int,
    "slug": str,
    "version": str,
    "built_at": str,
    "ep_mcp_version": str,
    "content_hash": str,
    "files": int,
    "git_commit": (str, type(None)),
    "index_sha256": str,
    "index_bytes": int,
    "schema_version": int,
    "features": dict,
    "chunks": int,
    "build_key": dict,
}


def read_manifest(version_dir: Path) -> Manifest:
    """The manifest of one version folder, every field present and of its type."""
    path = version_dir / MANIFEST
    try:
        text = read_bounded(path).decode("utf-8")
        too_deep(text, path)
        data = json.loads(text)
    except FileNotFoundError:
        raise ArtifactError(f"{version_dir}: no {MANIFEST} — not an ep-mcp artifact") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ArtifactError(f"{path}: unreadable manifest ({_short(exc)})") from None
    if not isinstance(data, dict):
        raise ArtifactError(f"{path}: the manifest must be a JSON object")
    for name, kind in _FIELDS.items():
        if name not in data:
            raise ArtifactError(f"{path}: manifest field '{name}' is missing")
        if not isinstance(data[name], kind) or isinstance(data[name], bool):
            raise ArtifactError(f"{path}: manifest field '{name}' has the wrong type")
    if data["artifact_format"] > ARTIFACT_FORMAT:
        raise ArtifactError(
            f"{path}: artifact format {data['artifact_format']} is newer than this ep-mcp "
            f"reads ({ARTIFACT_FORMAT}) — upgrade ep-mcp"
        )
    return Manifest(**{name: data[name] for name in _FIELDS})


def write_manifest(version_dir: Path, manifest: Manifest) -> None:
    text = json.dumps(manifest.to_dict(), indent=2, sort_keys=True) + "\n"
    path = version_dir / MANIFEST
    with path.open("w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def _short(exc: BaseException, limit: int = 160) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[:limit] + "…"


def read_bounded(path: Path, limit: int = MAX_MANIFEST_BYTES) -> bytes:
    """A regular file's bytes, never through a link, never more than ``limit``."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if os.path.islink(path):
            raise ArtifactError(f"{path} is a symbolic link — an artifact brings files") from None
        raise exc
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ArtifactError(f"{path} is not a regular file")
        if st.st_size > limit:
            raise ArtifactError(f"{path}: {st.st_size} bytes, over the {limit}-byte limit")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ArtifactError(f"{path}: over the {limit}-byte limit")
    return data


def too_deep(text: str, path: Path, limit: int = MAX_DEPTH) -> None:
    """Refuse JSON nested deeper than ``limit`` before parsing it (brackets outside strings)."""
    depth = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                raise ArtifactError(
                    f"{path}: JSON nested over {limit} deep — not an ep-mcp manifest"
                )
        elif ch in "]}":
            depth -= 1
