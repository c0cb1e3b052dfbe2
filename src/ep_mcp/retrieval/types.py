"""Search requests and results: small frozen records, JSON-ready through ``to_dict``."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from ep_mcp.errors import QueryError

# The messages every front door (MCP, /search, the workbench, the CLI) gives for a bad search.
BLANK_QUERY = "the query is blank — pass some words to search for"
MAX_RESULTS = 50  # ep_search's `max_results` (and /search's `n`, the CLI's -n) is 1..50


def out_of_range(name: str, lo: int, hi: int, got: object) -> str:
    """The one wording of a number outside its range, naming the caller's own parameter."""
    return f"`{name}` must be between {lo} and {hi} — got {str(got)[:40]}"


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

    @classmethod
    def from_args(
        cls,
        args: Mapping[str, object],
        *,
        vector: tuple[float, ...] | None = None,
        explain: bool = False,
    ) -> SearchRequest:
        """A request from `ep_search`'s arguments (``query``, ``max_results``, ``type``,
        ``tags``, ``reconstruct``, ``include_low_confidence``, ``rerank``): the one place a
        search's arguments are checked past their schema, whichever door they came in by.
        ``vector`` (POST /search) and ``explain`` (CLI, workbench) are outside the schema."""
        query = args.get("query")
        if not isinstance(query, str):
            raise QueryError("`query` must be a string")
        if not query.strip():
            raise QueryError(BLANK_QUERY)
        k = args.get("max_results", 10)
        if isinstance(k, bool) or not isinstance(k, int | float):
            raise QueryError("`max_results` must be an integer")
        if not 1 <= k <= MAX_RESULTS:
            raise QueryError(out_of_range("max_results", 1, MAX_RESULTS, k))
        doc_type = args.get("type")
        tags = args.get("tags") or ()
        if not isinstance(tags, list | tuple):
            raise QueryError("`tags` must be a list of strings")
        return cls(
            query=query,
            k=int(k),
            type=str(doc_type) if doc_type else None,
            tags=tuple(str(t) for t in tags),
            reconstruct=bool(args.get("reconstruct", False)),
            vector=vector,
            explain=explain,
            include_low_confidence=bool(args.get("include_low_confidence", False)),
            rerank=bool(args.get("rerank", True)),
        )


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
        """The fields in order (``extra``'s keys last), what ``asdict`` gives, made field by
        field: ``asdict`` deep-copies every string, which cost an answer of ten hits ~0.7 ms
        (a fifth of the search). Strings and numbers are immutable and kept; anything else
        (lists, dicts in ``extra``) is deep-copied, so the dict shares nothing mutable with the
        hit (``extra`` holds plain JSON values, which ``asdict`` copies the same way)."""
        values = self.__dict__
        data = {name: _plain(values[name]) for name in _HIT_FIELDS}
        data["tags"] = list(self.tags)
        data["heading_path"] = list(self.heading_path)
        data["line_range"] = list(self.line_range)
        if self.confidence is None:
            data.pop("confidence")
        data.update((key, _plain(value)) for key, value in self.extra.items())
        return data


_HIT_FIELDS = tuple(f.name for f in fields(Hit) if f.name != "extra")
_IMMUTABLE = (str, int, float, type(None))  # bool is an int


def _plain(value: Any) -> Any:
    """``value`` as ``asdict`` leaves it, without its copy of what cannot change."""
    return value if isinstance(value, _IMMUTABLE) else copy.deepcopy(value)


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
