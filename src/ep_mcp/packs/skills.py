"""Skills-repository reader: every directory holding SKILL.md is one skill item."""

from __future__ import annotations

import posixpath
from pathlib import Path

from ep_mcp.packs.documents import (
    ParsedFile,
    build_document,
    default_title,
    meta_str,
    read_markdown_files,
)
from ep_mcp.packs.files import Warnings
from ep_mcp.packs.models import Document, Pack, SkillItem
from ep_mcp.packs.references import References, link_edges

SKILL_FILE = "SKILL.md"


def _skill_names(
    skill_files: dict[str, ParsedFile], pack_slug: str, warnings: Warnings
) -> dict[str, str]:
    """Directory → skill name (frontmatter name, else directory name); duplicates disambiguated."""
    names: dict[str, str] = {}
    taken: dict[str, str] = {}
    for directory, parsed in sorted(skill_files.items()):
        name = meta_str(parsed.meta, "name") or posixpath.basename(directory) or pack_slug
        if name in taken:
            warnings.add(
                parsed.path,
                f"skill name '{name}' is also used by {taken[name]} — served as '{directory}'; "
                "give each skill a unique name",
            )
            name = directory
        taken[name] = parsed.path
        names[directory] = name
    return names


def _owner(path: str, skill_dirs: dict[str, str]) -> str | None:
    """The deepest skill directory containing ``path``, or None."""
    directory = posixpath.dirname(path)
    while True:
        if directory in skill_dirs:
            return directory
        if not directory:
            return None
        directory = posixpath.dirname(directory)


def _skill_title(parsed: ParsedFile) -> str:
    return meta_str(parsed.meta, "name") or default_title(parsed)


def _document(parsed: ParsedFile, skill: str | None) -> Document:
    if skill is None:
        return build_document(parsed)
    is_skill = posixpath.basename(parsed.path) == SKILL_FILE
    return build_document(
        parsed,
        title=_skill_title(parsed),
        doc_type="skill" if is_skill else "skill-file",
        skill=skill,
    )


def load_skills(root: Path, *, slug: str, max_file_bytes: int) -> Pack:
    """Read a skills repository (``root`` resolved)."""
    warnings = Warnings()
    parsed_files, _ = read_markdown_files(root, max_file_bytes, warnings)
    skill_files = {
        posixpath.dirname(p.path): p
        for p in parsed_files
        if posixpath.basename(p.path) == SKILL_FILE
    }
    names = _skill_names(skill_files, slug, warnings)
    documents: list[Document] = []
    members: dict[str, list[str]] = {directory: [] for directory in names}
    for parsed in parsed_files:
        owner = _owner(parsed.path, names)
        documents.append(_document(parsed, names[owner] if owner is not None else None))
        if owner is not None and parsed is not skill_files[owner]:
            members[owner].append(parsed.path)
    skills = tuple(
        SkillItem(
            name=names[directory],
            description=meta_str(parsed.meta, "description") or "",
            directory=directory,
            skill_file=parsed.path,
            files=(parsed.path, *sorted(members[directory])),
        )
        for directory, parsed in sorted(skill_files.items())
    )
    edges = link_edges(documents, References(documents, slug))
    return Pack(
        root=root,
        slug=slug,
        name=root.name,
        kind="skills",
        pack_type="skills",
        manifest={},
        documents=tuple(documents),
        edges=tuple(edges),
        skills=skills,
        warnings=tuple(warnings.items),
    )
