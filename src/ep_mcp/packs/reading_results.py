"""What reading a pack answers: frozen dataclasses, turned into JSON only at the tools
(`to_dict`, with exactly the keys and order the tools have always sent)."""

from __future__ import annotations

from dataclasses import dataclass

from ep_mcp.json_types import JsonObject, fields_dict
from ep_mcp.packs.models import Document


@dataclass(frozen=True)
class DocumentInfo:
    path: str
    id: str | None
    title: str
    type: str
    tags: tuple[str, ...]
    content_hash: str
    verified_at: str | None
    navigation: bool
    requires: tuple[str, ...]

    @classmethod
    def of(cls, doc: Document) -> DocumentInfo:
        return cls(
            doc.path,
            doc.id,
            doc.title,
            doc.type,
            tuple(doc.tags),
            doc.content_hash,
            doc.verified_at,
            doc.navigation,
            tuple(doc.requires),
        )

    def to_dict(self) -> JsonObject:
        return {
            "path": self.path,
            "id": self.id,
            "title": self.title,
            "type": self.type,
            "tags": list(self.tags),
            "content_hash": self.content_hash,
            "verified_at": self.verified_at,
            "navigation": self.navigation,
            "requires": list(self.requires),
        }


@dataclass(frozen=True)
class Span:
    """Raw file lines ``line_range`` (1-based, inclusive); with reconstruct, their bytes."""

    text: str
    line_range: tuple[int, int]
    byte_offset: tuple[int, int] | None = None
    span_hash: str | None = None  # "sha256:<hex>" of text

    def to_dict(self) -> JsonObject:
        out: JsonObject = {"text": self.text, "line_range": list(self.line_range)}
        if self.byte_offset is not None:
            out["byte_offset"] = list(self.byte_offset)
            out["span_hash"] = self.span_hash
        return out


@dataclass(frozen=True)
class NeighborSection:
    heading_path: tuple[str, ...]
    span: Span

    def to_dict(self) -> JsonObject:
        return {"heading_path": list(self.heading_path), **self.span.to_dict()}


@dataclass(frozen=True)
class DocumentRead:
    """A whole atom (``section`` None, ``sections`` listed) or one section of it."""

    pack: str
    doc: DocumentInfo
    requires_resolved: tuple[str, ...]
    span: Span
    section: tuple[str, ...] | None
    sections: tuple[str, ...] | None = None  # whole reads: every heading path
    neighbors: tuple[NeighborSection, ...] | None = None  # section reads that asked for them
    fragment_id: str | None = None  # with reconstruct

    def to_dict(self) -> JsonObject:
        out: JsonObject = {
            "pack": self.pack,
            **self.doc.to_dict(),
            "requires_resolved": list(self.requires_resolved),
            **self.span.to_dict(),
            "section": None if self.section is None else list(self.section),
        }
        if self.sections is not None:
            out["sections"] = list(self.sections)
        if self.neighbors is not None:
            out["neighbors"] = [n.to_dict() for n in self.neighbors]
        if self.fragment_id is not None:
            out["fragment_id"] = self.fragment_id
        return out


@dataclass(frozen=True)
class TopicFile:
    path: str
    title: str
    id: str | None
    navigation: bool

    def to_dict(self) -> JsonObject:
        return fields_dict(self)


@dataclass(frozen=True)
class Topic:
    type: str
    files: tuple[TopicFile, ...]

    def to_dict(self) -> JsonObject:
        return {
            "type": self.type,
            "count": len(self.files),
            "files": [f.to_dict() for f in self.files],
        }


@dataclass(frozen=True)
class Topics:
    pack: str
    name: str
    kind: str
    topics: tuple[Topic, ...]

    def to_dict(self) -> JsonObject:
        return {
            "pack": self.pack,
            "name": self.name,
            "kind": self.kind,
            "files": sum(len(t.files) for t in self.topics),
            "topics": [t.to_dict() for t in self.topics],
        }


@dataclass(frozen=True)
class GraphNode:
    path: str
    id: str | None
    title: str
    type: str
    depth: int

    def to_dict(self) -> JsonObject:
        return fields_dict(self)


@dataclass(frozen=True)
class GraphEdge:
    source: str
    target: str
    kind: str

    def to_dict(self) -> JsonObject:
        return fields_dict(self)


@dataclass(frozen=True)
class Traversal:
    pack: str
    start: str
    depth: int
    nodes: tuple[GraphNode, ...]
    edges: tuple[GraphEdge, ...]

    def to_dict(self) -> JsonObject:
        return {
            "pack": self.pack,
            "start": self.start,
            "depth": self.depth,
            "nodes": [n.to_dict() for n in self.nodes],
            "edges": [e.to_dict() for e in self.edges],
        }
