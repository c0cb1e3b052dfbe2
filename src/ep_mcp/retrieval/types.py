"""Search requests and results: small frozen records, JSON-ready through ``to_dict``."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class SearchRequest:
    query: str
    k: int = 10
    type: str | None = None  # filter
    tags: tuple[str, ...] = ()  # filter: any of
    reconstruct: bool = False
    vector: tuple[float, ...] | None = None  # caller-supplied query embedding
    explain: bool = False
    type_hint: str | None = None  # boost, not filter
    tag_hints: tuple[str, ...] = ()  # boost per shared tag
    include_low_confidence: bool = False  # keep the hits even below min_answerable
    rerank: bool = True  # False: skip the configured reranker for this query


@dataclass(frozen=True)
class Hit:
    id: str  # the file's stable id (frontmatter id) or its path
    source_file: str
    title: str
    type: str
    tags: tuple[str, ...]
    heading_path: tuple[str, ...]
    text: str
    score: float
    content_hash: str
    verified_at: str | None
    chunk_index: int
    line_range: tuple[int, int]
    graph_expanded: bool = False
    requires_expanded: bool = False
    confidence: float | None = None  # estimated probability that the hit is relevant
    extra: dict[str, Any] = field(default_factory=dict)  # freshness, reconstruct fields

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        extra = data.pop("extra")
        data["tags"] = list(self.tags)
        data["heading_path"] = list(self.heading_path)
        data["line_range"] = list(self.line_range)
        if self.confidence is None:
            data.pop("confidence")
        data.update(extra)
        return data


@dataclass(frozen=True)
class SearchResult:
    query: str
    pack: str
    mode: str  # hybrid | lexical | vector | empty
    hits: tuple[Hit, ...]
    intent: str = "GENERAL"
    took_ms: float = 0.0
    notes: tuple[str, ...] = ()
    explain: tuple[dict[str, Any], ...] = ()
    answerable: float | None = None  # estimated probability that some hit answers the query
    covered: bool = True  # False: withheld below min_answerable ("not covered")
    assessment: Any = None  # retrieval.confidence.Assessment: the features (fitting, explain)
    # how strongly the pack answers: best cosine + coverage weight x term coverage (lexical
    # mode: the coverage); one scale across packs served with one model (``retrieval.merge``)
    activation: float | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "query": self.query,
            "pack": self.pack,
            "mode": self.mode,
            "intent": self.intent,
            "took_ms": round(self.took_ms, 2),
            "results": [h.to_dict() for h in self.hits],
        }
        if self.answerable is not None:
            data["answerable"] = round(self.answerable, 4)
            data["covered"] = self.covered
        if self.notes:
            data["notes"] = list(self.notes)
        if self.explain:
            data["explain"] = list(self.explain)
        return data
