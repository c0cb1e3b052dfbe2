"""Entry point: detect a pack's kind and read it into a Pack.

Kinds are a dict of readers (`READERS`), tried in order: a new kind of pack is one reader
module and one `register_kind` call (before `markdown`, which takes any folder).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ep_mcp.errors import PackError
from ep_mcp.packs.expertpack import MANIFEST, load_expertpack, slugify
from ep_mcp.packs.files import SKIP_DIRS
from ep_mcp.packs.markdown import load_markdown
from ep_mcp.packs.models import Pack
from ep_mcp.packs.skills import SKILL_FILE, load_skills

logger = logging.getLogger(__name__)

SKILL_SEARCH_DEPTH = 4  # folders below the root searched for SKILL.md when detecting


def empty_pack_message(root: Path) -> str:
    """What to say of a pack folder that holds no markdown file."""
    return (
        f"no markdown files in {root} — nothing to index (add .md files to the folder; hidden "
        "files and folders are skipped), or pass the folder that holds them"
    )


def example_pack() -> Path:
    """The ExpertPack bundled with ep-mcp (served when no pack and no config is given)."""
    from importlib.resources import files

    return Path(str(files("ep_mcp") / "example_pack"))


def _has_skill_file(root: Path, max_depth: int = SKILL_SEARCH_DEPTH) -> bool:
    for current, dirnames, filenames in os.walk(root):
        if SKILL_FILE in filenames:
            return True
        depth = len(Path(current).relative_to(root).parts)
        keep = [d for d in dirnames if not d.startswith(".") and d not in SKIP_DIRS]
        dirnames[:] = keep if depth < max_depth else []
    return False


@dataclass(frozen=True)
class PackReader:
    """One kind of pack: how to recognise its folder and how to read it."""

    kind: str
    detect: Callable[[Path], bool]
    # (root, slug or None for the kind's own default, max_file_bytes) → Pack
    read: Callable[[Path, str | None, int], Pack]


READERS: dict[str, PackReader] = {}


def register_kind(reader: PackReader, *, before: str | None = None) -> None:
    """Add a kind; detection tries kinds in order, so a specific kind goes ``before`` a
    general one (every kind goes before `markdown`, which matches any folder)."""
    items = [(k, r) for k, r in READERS.items() if k != reader.kind]
    at = next((i for i, (k, _) in enumerate(items) if k == before), len(items))
    items.insert(at, (reader.kind, reader))
    READERS.clear()
    READERS.update(items)


register_kind(
    PackReader(
        "expertpack",
        lambda root: (root / MANIFEST).is_file(),
        lambda root, slug, cap: load_expertpack(root, slug=slug, max_file_bytes=cap),
    )
)
register_kind(
    PackReader(
        "skills",
        _has_skill_file,
        lambda root, slug, cap: load_skills(
            root, slug=slug or slugify(root.name), max_file_bytes=cap
        ),
    )
)
register_kind(
    PackReader(
        "markdown",
        lambda root: True,
        lambda root, slug, cap: load_markdown(
            root, slug=slug or slugify(root.name), max_file_bytes=cap
        ),
    )
)


def detect_kind(root: Path) -> str:
    """The first registered kind that recognises the folder: manifest.yaml → expertpack; a
    SKILL.md within 4 folders → skills; else markdown."""
    return next(r.kind for r in READERS.values() if r.detect(root))


def _check_root(root: Path) -> Path:
    root = root.expanduser()
    if not root.exists():
        raise PackError(
            f"pack folder '{root}' does not exist — pass the path of a folder of markdown files"
        )
    if not root.is_dir():
        raise PackError(f"pack path '{root}' is a file — pass the folder that contains it")
    return root.resolve()


def load_pack(
    root: Path,
    *,
    kind: str | None = None,
    slug: str | None = None,
    max_file_bytes: int = 2_000_000,
) -> Pack:
    """Read a pack folder. Bad files become ``Pack.warnings``; only a missing folder raises."""
    root = _check_root(Path(root))
    if kind is not None and kind not in READERS:
        raise PackError(f"unknown pack kind {kind!r} — use one of {', '.join(READERS)}")
    detected = kind if kind is not None else detect_kind(root)
    logger.info("reading %s pack at %s", detected, root)
    return READERS[detected].read(root, slug, max_file_bytes)
