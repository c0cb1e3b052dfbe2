"""From a pack folder's markdown files to Documents: shared by every pack kind."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ep_mcp.packs.files import SourceFile, Warnings, is_markdown, read_text_file, walk_files
from ep_mcp.packs.frontmatter import Frontmatter, body_hash, body_of, first_heading
from ep_mcp.packs.frontmatter import parse_frontmatter as _parse_frontmatter
from ep_mcp.packs.models import Document, Sidecar
from ep_mcp.packs.sidecars import load_sidecar


@dataclass(frozen=True)
class ParsedFile:
    """A readable markdown file with its frontmatter, before kind-specific placement."""

    src: SourceFile
    fm: Frontmatter
    computed_hash: str  # body_hash of the actual body
    sidecar: Sidecar | None

    @property
    def path(self) -> str:
        return self.src.path

    @property
    def meta(self) -> dict[str, Any]:
        return self.fm.meta


def read_markdown_files(
    root: Path, max_file_bytes: int, warnings: Warnings
) -> tuple[list[ParsedFile], list[str]]:
    """Every readable markdown file under ``root`` (sorted), plus all file paths seen."""
    all_files = walk_files(root, warnings)
    present = set(all_files)
    parsed = []
    for rel in all_files:
        if not is_markdown(rel):
            continue
        item = _read_one(root, rel, max_file_bytes, present, warnings)
        if item is not None:
            parsed.append(item)
    return parsed, all_files


def _read_one(
    root: Path, rel: str, max_bytes: int, present: set[str], warnings: Warnings
) -> ParsedFile | None:
    src = read_text_file(root, rel, max_bytes, warnings)
    if src is None:
        return None
    fm = _parse_frontmatter(src.text, source=rel)
    if fm.problem:
        if fm.hostile:
            warnings.add(rel, f"{fm.problem} — file skipped", fm.problem_line)
            return None
        warnings.add(rel, f"{fm.problem} — indexed without frontmatter", fm.problem_line)
    computed = body_hash(body_of(src.text, fm.body_line))
    sidecar = load_sidecar(root, src, fm.meta, computed, present, warnings)
    return ParsedFile(src, fm, computed, sidecar)


def meta_str(meta: Mapping[str, Any], key: str) -> str | None:
    """A scalar frontmatter value as a non-empty string, else None."""
    value = meta.get(key)
    if value is None or isinstance(value, Mapping | list):
        return None
    text = str(value).strip()
    return text or None


def meta_list(meta: Mapping[str, Any], key: str) -> tuple[str, ...]:
    """A list-valued field (a list, or a comma-separated string) as non-empty strings."""
    value = meta.get(key)
    if isinstance(value, str):
        items: list[Any] = value.split(",")
    elif isinstance(value, list):
        items = value
    else:
        return ()
    cleaned = (str(v).strip() for v in items if v is not None and not isinstance(v, Mapping | list))
    return tuple(dict.fromkeys(v for v in cleaned if v))


def stem_of(path: str) -> str:
    return posixpath.splitext(posixpath.basename(path))[0]


def default_title(parsed: ParsedFile) -> str:
    """Frontmatter title, else the first `# ` heading of the body, else the file stem."""
    return (
        meta_str(parsed.meta, "title")
        or first_heading(parsed.src.text, parsed.fm.body_line)
        or stem_of(parsed.path)
    )


def build_document(
    parsed: ParsedFile,
    *,
    title: str | None = None,
    doc_type: str | None = None,
    navigation: bool = False,
    always: bool = False,
    on_demand: bool = False,
    skill: str | None = None,
) -> Document:
    """A Document from a parsed file; kind-specific loaders decide title, type and tiers."""
    meta = parsed.meta
    volatile = meta.get("volatile")
    volatile = volatile if isinstance(volatile, Mapping) else {}
    declared = meta_str(meta, "content_hash")
    return Document(
        path=parsed.path,
        text=parsed.src.text,
        body_line=parsed.fm.body_line,
        meta=meta,
        title=title or default_title(parsed),
        type=(meta_str(meta, "type") or "") if doc_type is None else doc_type,
        tags=meta_list(meta, "tags"),
        id=meta_str(meta, "id"),
        content_hash=declared or parsed.computed_hash,
        file_hash=parsed.src.file_hash,
        navigation=navigation,
        always=always,
        on_demand=on_demand,
        requires=meta_list(meta, "requires"),
        related=meta_list(meta, "related"),
        verified_at=meta_str(meta, "verified_at"),
        refresh=meta_str(meta, "refresh") or meta_str(volatile, "refresh"),
        expires_at=meta_str(volatile, "expires_at"),
        sidecar=parsed.sidecar,
        skill=skill,
        mtime_ns=parsed.src.mtime_ns,
        size=parsed.src.size,
    )
