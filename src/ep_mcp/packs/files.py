"""Walking a pack folder and reading its files defensively: every bad file is one warning."""

from __future__ import annotations

import hashlib
import logging
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ep_mcp.packs.models import PackWarning

logger = logging.getLogger(__name__)

SKIP_DIRS = frozenset({".git", ".ep-mcp", "node_modules", "__pycache__"})
MARKDOWN_SUFFIXES = (".md", ".markdown")


class Warnings:
    """Collects PackWarnings in order, logging each once."""

    def __init__(self) -> None:
        self.items: list[PackWarning] = []
        self._seen: set[PackWarning] = set()

    def add(self, path: str, message: str, line: int | None = None) -> None:
        warning = PackWarning(path, message, line)
        if warning in self._seen:
            return
        logger.warning("%s", warning)
        self._seen.add(warning)
        self.items.append(warning)


@dataclass(frozen=True)
class SourceFile:
    """A decoded text file of a pack."""

    path: str  # pack-relative POSIX path
    text: str
    file_hash: str  # sha256 hex of the raw bytes
    mtime_ns: int
    size: int


def is_markdown(path: str) -> bool:
    return path.lower().endswith(MARKDOWN_SUFFIXES)


def printable_name(name: str) -> str:
    """A name safe to show and store: undecodable bytes become U+FFFD."""
    return os.fsencode(name).decode("utf-8", "replace")


def _valid_utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _outside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root)
    except (OSError, RuntimeError, ValueError):
        return True
    return False


def walk_files(root: Path, warnings: Warnings) -> list[str]:
    """Pack-relative POSIX paths of all visible files under ``root`` (already resolved), sorted.

    Skips hidden and tool directories, symlinked directories, and names that are not valid
    UTF-8 (they would break SQLite later), warning where a user would want to know.
    """
    found: list[str] = []

    def on_error(exc: OSError) -> None:
        where = Path(exc.filename or root)
        rel = where.relative_to(root).as_posix() if where.is_relative_to(root) else str(where)
        warnings.add(printable_name(rel), f"cannot list folder: {exc.strerror} — check permissions")

    for current, dirnames, filenames in os.walk(root, onerror=on_error):
        base = Path(current)
        rel_dir = base.relative_to(root)
        kept = []
        for name in sorted(dirnames):
            rel = (rel_dir / name).as_posix()
            if name.startswith(".") or name in SKIP_DIRS:
                continue
            if not _valid_utf8(name):
                warnings.add(
                    printable_name(rel), "folder name is not valid UTF-8 — skipped; rename it"
                )
            elif (base / name).is_symlink():
                if _outside(base / name, root):
                    warnings.add(rel, "symlinked folder points outside the pack — ignored")
                else:
                    logger.debug("%s: symlinked folder inside the pack — not followed", rel)
            else:
                kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            rel = (rel_dir / name).as_posix()
            if _valid_utf8(name):
                found.append(rel)
            elif is_markdown(name):
                warnings.add(
                    printable_name(rel), "file name is not valid UTF-8 — skipped; rename it"
                )
    return sorted(found)


def _read_bytes(path: Path, limit: int) -> bytes:
    # O_NONBLOCK: a file swapped for a FIFO after the stat check must not hang the loader.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(0, "not a regular file")
        return handle.read(limit + 1)


def _stat_regular(path: Path, rel: str, root: Path, warnings: Warnings) -> os.stat_result | None:
    if path.is_symlink():
        if _outside(path, root):
            warnings.add(rel, "symlink points outside the pack (or is broken) — ignored")
            return None
        path = path.resolve()
    st = path.stat()
    if not stat.S_ISREG(st.st_mode):
        warnings.add(rel, "not a regular file — skipped")
        return None
    return st


def read_text_file(root: Path, rel: str, max_bytes: int, warnings: Warnings) -> SourceFile | None:
    """Read and decode one pack file, or warn once (naming the reason) and return None."""
    path = root / rel
    try:
        st = _stat_regular(path, rel, root, warnings)
        if st is None:
            return None
        if st.st_size > max_bytes:
            warnings.add(rel, _too_big(st.st_size, max_bytes))
            return None
        raw = _read_bytes(path, max_bytes)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        warnings.add(rel, f"cannot read file: {reason} — skipped; check permissions")
        return None
    if len(raw) > max_bytes:
        warnings.add(rel, _too_big(len(raw), max_bytes))
        return None
    text = _decode(raw, rel, warnings)
    if text is None:
        return None
    digest = hashlib.sha256(raw).hexdigest()
    return SourceFile(rel, text, digest, st.st_mtime_ns, len(raw))


def _too_big(size: int, limit: int) -> str:
    return (
        f"file is {size} bytes, over the {limit}-byte limit — skipped; "
        "raise chunking.max_file_bytes to include it"
    )


def _decode(raw: bytes, rel: str, warnings: Warnings) -> str | None:
    if b"\x00" in raw:
        warnings.add(rel, "binary file (contains NUL bytes) — skipped")
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        byte = raw[exc.start]
        warnings.add(rel, f"not valid UTF-8 (byte 0x{byte:02x}) — skipped; save it as UTF-8", line)
        return None
    return text.removeprefix("\ufeff")
