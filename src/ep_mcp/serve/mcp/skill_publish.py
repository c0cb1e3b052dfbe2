"""A pack published as one Agent Skill (SEP-2640): the snapshot.

The snapshot (a generated SKILL.md plus the pack's files) is computed from one `Pack` object, so
what `skills/list` promises (digest, size) is exactly what `resources/read` serves; a reload
builds a new Pack and so a new snapshot. The MCP extension that lists them is
`skill_extension.py`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote

from ep_mcp.packs.models import Pack

logger = logging.getLogger(__name__)

SKILL_FILE = "SKILL.md"
MAX_FILES = 512
MAX_BYTES = 16 * 1024 * 1024
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


@dataclass(frozen=True)
class SkillFile:
    uri: str
    path: str  # pack-relative (SKILL.md for the generated one)
    text: str
    mime_type: str
    digest: str  # "sha256:<hex>" of text.encode("utf-8")
    size: int

    def manifest_entry(self) -> dict[str, object]:
        return {"uri": self.uri, "digest": self.digest, "size": self.size}


@dataclass(frozen=True)
class SkillSnapshot:
    slug: str
    frontmatter: dict[str, str]
    files: dict[str, SkillFile]  # by uri

    @property
    def skill_uri(self) -> str:
        return f"skill://{self.slug}/{SKILL_FILE}"

    def entry(self) -> dict[str, object]:
        return {
            "uri": self.skill_uri,
            "frontmatter": dict(self.frontmatter),
            "resources": [self.files[u].manifest_entry() for u in sorted(self.files)],
        }


def skills_enabled(pack: Pack) -> bool:
    mcp = pack.manifest.get("mcp")
    skills = mcp.get("skills") if isinstance(mcp, Mapping) else None
    return isinstance(skills, Mapping) and skills.get("enabled") is True


def skill_uri(slug: str, path: str) -> str:
    return f"skill://{slug}/{quote(path, safe='/-._~')}"


def _file(uri: str, path: str, text: str) -> SkillFile:
    data = text.encode("utf-8")
    mime = "text/markdown" if path.endswith((".md", ".markdown")) else "text/plain"
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    return SkillFile(uri, path, text, mime, digest, len(data))


def _description(pack: Pack) -> str:
    text = " ".join((pack.description or f"Knowledge pack {pack.name}.").split())
    return text[:1024]


def render_skill_md(pack: Pack, frontmatter: Mapping[str, str], paths: list[str]) -> str:
    """The generated SKILL.md: quoted YAML frontmatter, then how to use the pack."""
    # plain keys, JSON-quoted values: YAML reads them back as the same strings (never dates,
    # bools or numbers), which the host compares field by field with `frontmatter`
    head = "".join(f"{k}: {json.dumps(v, ensure_ascii=False)}\n" for k, v in frontmatter.items())
    mcp = pack.manifest.get("mcp")
    own = mcp.get("instructions") if isinstance(mcp, Mapping) else None
    lines = [f"---\n{head}---", "", f"# {pack.name}", ""]
    if isinstance(own, str) and own.strip():
        lines += [own.strip(), ""]
    lines += [
        "## How to use this skill",
        "",
        "1. Find the file that answers the question in the list below (or search with the "
        "`ep_search` tool when the server offers it).",
        "2. Read the whole file, then the files its `requires:` frontmatter names.",
        "3. Answer only from what you read and cite the file; if no file covers it, say so.",
        "",
        "## Files",
        "",
    ]
    for path in paths:
        doc = pack.document(path)
        title = doc.title if doc is not None else path
        lines.append(f"- [{title}]({quote(path, safe='/-._~')})")
    return "\n".join(lines) + "\n"


def build_snapshot(pack: Pack) -> SkillSnapshot | None:
    """The pack as a skill, or None (not enabled, slug not a valid skill name, over limits)."""
    if not skills_enabled(pack):
        return None
    if len(pack.slug) > 64 or not _NAME.fullmatch(pack.slug):
        logger.warning(
            "pack %s: mcp.skills.enabled but the slug is not a valid skill name "
            "(1-64 of a-z, 0-9, single hyphens) — skill not published; rename the slug",
            pack.slug,
        )
        return None
    paths = []
    for doc in sorted(pack.documents, key=lambda d: d.path):
        if doc.on_demand:
            continue
        if doc.path == SKILL_FILE:
            logger.warning(
                "pack %s: its own SKILL.md collides with the generated one — "
                "not served as a skill file",
                pack.slug,
            )
            continue
        paths.append(doc.path)
    frontmatter = {"name": pack.slug, "description": _description(pack)}
    files = {}
    for path in paths:
        text = pack.document(path).text  # type: ignore[union-attr]  # listed just above
        uri = skill_uri(pack.slug, path)
        files[uri] = _file(uri, path, text)
    main_uri = f"skill://{pack.slug}/{SKILL_FILE}"
    files[main_uri] = _file(main_uri, SKILL_FILE, render_skill_md(pack, frontmatter, paths))
    total = sum(f.size for f in files.values())
    if len(files) > MAX_FILES or total > MAX_BYTES:
        logger.warning(
            "pack %s: %d files / %d bytes exceed the skill limits (%d files, %d bytes) — "
            "skill not published; split the pack or mark files on_demand",
            pack.slug,
            len(files),
            total,
            MAX_FILES,
            MAX_BYTES,
        )
        return None
    return SkillSnapshot(pack.slug, frontmatter, files)


_CACHE: dict[int, tuple[weakref.ref[Pack], SkillSnapshot | None]] = {}


def snapshot_of(pack: Pack) -> SkillSnapshot | None:
    """The (cached) snapshot of this Pack object; a reloaded pack gets a fresh one."""
    key = id(pack)
    entry = _CACHE.get(key)
    if entry is not None and entry[0]() is pack:
        return entry[1]
    snap = build_snapshot(pack)
    _CACHE[key] = (weakref.ref(pack), snap)
    weakref.finalize(pack, _CACHE.pop, key, None)
    return snap


# -- the MCP extension ---------------------------------------------------------------------
