"""Walking a pack folder and reading its files defensively: every bad file is one warning."""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from ep_mcp.packs.models import PackWarning
from ep_mcp.packs.safeopen import (
    ContainmentError,
    FileTooLargeError,
    contained_path,
    is_hidden,
    read_contained,
)

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

    Skips hidden files and folders, tool folders, symlinked folders, symlinked files whose
    target breaks the containment rule (``safeopen``), and names that are not valid UTF-8
    (they would break SQLite later), warning where a user would want to know.
    """
    found: list[str] = []
    folders = [("", str(root))]  # (pack-relative folder, its path on disk); depth first
    while folders:
        rel_dir, current = folders.pop()
        try:
            with os.scandir(current) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            where = rel_dir or "."
            warnings.add(
                printable_name(where), f"cannot list folder: {exc.strerror} — check permissions"
            )
            continue
        subfolders = []
        for entry in entries:
            name = entry.name
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if is_hidden(name):
                continue
            is_link = entry.is_symlink()
            try:  # a symlink to a folder is a folder here (as os.walk sees it): not followed
                is_dir = entry.is_dir()
            except OSError:  # a link loop, or no permission to look: treated as a file link
                is_dir = False
            if is_dir:
                if name in SKIP_DIRS:
                    continue
                if not _valid_utf8(name):
                    warnings.add(
                        printable_name(rel), "folder name is not valid UTF-8 — skipped; rename it"
                    )
                elif is_link:
                    if _outside(Path(entry.path), root):
                        warnings.add(rel, "symlinked folder points outside the pack — ignored")
                    else:
                        logger.debug("%s: symlinked folder inside the pack — not followed", rel)
                else:
                    subfolders.append((rel, entry.path))
                continue
            if not _valid_utf8(name):
                if is_markdown(name):
                    warnings.add(
                        printable_name(rel), "file name is not valid UTF-8 — skipped; rename it"
                    )
                continue
            if is_link:
                try:
                    contained_path(root, rel)  # a link is kept only if its target obeys the rule
                except ContainmentError as exc:
                    warnings.add(rel, _refused(exc))
                    continue
            found.append(rel)
        folders.extend(reversed(subfolders))
    return sorted(found)


def read_text_file(root: Path, rel: str, max_bytes: int, warnings: Warnings) -> SourceFile | None:
    """Read and decode one pack file under the containment rule (see ``safeopen``), or warn
    once (naming the reason) and return None. ``root`` is the resolved root of a pack load."""
    try:
        got = read_contained(root, rel, max_bytes, resolved=True)
    except FileTooLargeError as exc:
        warnings.add(rel, _too_big(exc.size, exc.limit))
        return None
    except ContainmentError as exc:
        warnings.add(rel, _refused(exc))
        return None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        warnings.add(rel, f"cannot read file: {reason} — skipped; check permissions")
        return None
    raw = got.data
    text = _decode(raw, rel, warnings)
    if text is None:
        return None
    digest = hashlib.sha256(raw).hexdigest()
    return SourceFile(rel, text, digest, got.mtime_ns, len(raw))


def _refused(exc: ContainmentError) -> str:
    return f"{exc.reason} — skipped"


def _too_big(size: int, limit: int) -> str:
    return (
        f"file is {size} bytes, over the {limit}-byte limit — skipped; "
        "raise index.max_file_bytes to include it"
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
