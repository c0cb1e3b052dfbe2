"""Entry point: detect a pack's kind and read it into a Pack."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import get_args

from ep_mcp.errors import PackError
from ep_mcp.packs.expertpack import MANIFEST, load_expertpack, slugify
from ep_mcp.packs.files import SKIP_DIRS
from ep_mcp.packs.markdown import load_markdown
from ep_mcp.packs.models import Pack, PackKind
from ep_mcp.packs.skills import SKILL_FILE, load_skills

logger = logging.getLogger(__name__)

KINDS: tuple[PackKind, ...] = get_args(PackKind)
SKILL_SEARCH_DEPTH = 4  # folders below the root searched for SKILL.md when detecting


def _has_skill_file(root: Path, max_depth: int = SKILL_SEARCH_DEPTH) -> bool:
    for current, dirnames, filenames in os.walk(root):
        if SKILL_FILE in filenames:
            return True
        depth = len(Path(current).relative_to(root).parts)
        keep = [d for d in dirnames if not d.startswith(".") and d not in SKIP_DIRS]
        dirnames[:] = keep if depth < max_depth else []
    return False


def detect_kind(root: Path) -> PackKind:
    """manifest.yaml → expertpack; a SKILL.md within 4 folders → skills; else markdown."""
    if (root / MANIFEST).is_file():
        return "expertpack"
    if _has_skill_file(root):
        return "skills"
    return "markdown"


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
    if kind is not None and kind not in KINDS:
        raise PackError(f"unknown pack kind {kind!r} — use one of {', '.join(KINDS)}")
    detected: PackKind = kind if kind is not None else detect_kind(root)
    logger.info("reading %s pack at %s", detected, root)
    if detected == "expertpack":
        return load_expertpack(root, slug=slug, max_file_bytes=max_file_bytes)
    pack_slug = slug or slugify(root.name)
    if detected == "skills":
        return load_skills(root, slug=pack_slug, max_file_bytes=max_file_bytes)
    return load_markdown(root, slug=pack_slug, max_file_bytes=max_file_bytes)
