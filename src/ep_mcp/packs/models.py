"""What a pack is once read: documents, edges and warnings. Plain frozen data, no I/O."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PackKind = str  # a registered reader's kind: expertpack, skills, markdown (packs/loader.py)


@dataclass(frozen=True)
class SidecarChunk:
    """One chunk of an RFC-004 `<stem>.chunks.yaml` sidecar."""

    chunk_id: str
    order: int
    section: str | None
    line_range: tuple[int, int]  # 1-based, inclusive, counted in the raw file
    context_prefix: str = ""


@dataclass(frozen=True)
class Sidecar:
    path: str  # pack-relative path of the sidecar file
    content_hash: str  # as declared, "sha256:<hex>"
    chunks: tuple[SidecarChunk, ...]
    file_hash: str  # sha256 hex of the sidecar's own bytes (for incremental re-index)


@dataclass(frozen=True)
class Document:
    """One markdown file of a pack (an atom)."""

    path: str  # pack-relative POSIX path, e.g. "concepts/x.md"
    text: str  # the whole decoded file, frontmatter included
    body_line: int  # 1-based line number where the body starts (after frontmatter)
    meta: Mapping[str, Any]  # frontmatter (empty when none)
    title: str
    type: str  # frontmatter type, or "" (skills: "skill"; supporting files: "skill-file")
    tags: tuple[str, ...]
    id: str | None  # stable citation key (frontmatter id), or None
    content_hash: str  # "sha256:<hex>" of the body (declared one if present, else computed)
    file_hash: str  # sha256 hex of the raw file bytes (incremental key)
    navigation: bool  # readable but never a retrieval hit
    always: bool  # in the manifest's context.always tier
    on_demand: bool  # in the manifest's context.on_demand tier
    requires: tuple[str, ...]  # raw requires: entries, unresolved
    related: tuple[str, ...]
    verified_at: str | None
    refresh: str | None  # ISO-8601 duration from frontmatter `refresh` or `volatile.refresh`
    expires_at: str | None  # volatile.expires_at
    sidecar: Sidecar | None  # a sidecar whose content_hash matches this file (stale ones are None)
    skill: str | None = (
        None  # for skill repositories: the skill item (its directory) this file belongs to
    )
    mtime_ns: int = 0
    size: int = 0

    @property
    def body(self) -> str:
        if self.body_line == 1:  # no frontmatter: the whole text, without splitting it
            return self.text
        return "".join(self.text.splitlines(keepends=True)[self.body_line - 1 :])


@dataclass(frozen=True)
class Edge:
    """A directed link between two documents (pack-relative paths)."""

    source: str
    target: str
    kind: str  # "graph:<kind>" from _graph.yaml, "wikilink", "related"


@dataclass(frozen=True)
class PackWarning:
    """A file that was skipped or a problem that was found, with what to do."""

    path: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class SkillItem:
    """A skill in a skills repository: a directory holding SKILL.md."""

    name: str  # frontmatter name, else the directory name
    description: str
    directory: str  # pack-relative directory
    skill_file: str  # pack-relative path of SKILL.md
    files: tuple[str, ...]  # all markdown files of the item (SKILL.md first)


@dataclass(frozen=True)
class Pack:
    root: Path  # absolute path of the pack folder
    slug: str
    name: str
    kind: PackKind
    pack_type: str  # manifest type (person|product|process|composite), or the kind
    manifest: Mapping[str, Any]
    documents: tuple[Document, ...]
    edges: tuple[Edge, ...] = ()
    skills: tuple[SkillItem, ...] = ()
    warnings: tuple[PackWarning, ...] = ()
    description: str = ""
    refresh_cycle: str | None = None  # manifest freshness.refresh_cycle
    _by_path: dict[str, Document] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._by_path.update({d.path: d for d in self.documents})

    def document(self, path: str) -> Document | None:
        return self._by_path.get(path)
