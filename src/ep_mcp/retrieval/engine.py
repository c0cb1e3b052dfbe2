"""The search pipeline: lexical and vector legs, fusion, per-file cap, slice (SPEC §4)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from ep_mcp.config import RetrievalSettings
from ep_mcp.errors import EmbeddingError, QueryError
from ep_mcp.index.store import StoredChunk, Store
from ep_mcp.retrieval.fusion import fuse_rrf
from ep_mcp.retrieval.lexical import query_terms
from ep_mcp.retrieval.types import Hit, SearchRequest, SearchResult

logger = logging.getLogger(__name__)

QueryEmbed = Callable[[str], npt.NDArray[np.float32]]


def to_hit(sc: StoredChunk, score: float) -> Hit:
    return Hit(
        id=sc.file.doc_id or sc.file.path,
        source_file=sc.file.path,
        title=sc.file.title,
        type=sc.file.type,
        tags=sc.file.tags,
        heading_path=sc.chunk.heading_path,
        text=sc.chunk.text,
        score=round(score, 6),
        content_hash=sc.file.content_hash,
        verified_at=sc.file.info.get("verified_at"),
        chunk_index=sc.chunk.chunk_index,
        line_range=sc.chunk.line_range,
    )


def search(
    store: Store,
    slug: str,
    request: SearchRequest,
    settings: RetrievalSettings,
    embed_query: QueryEmbed | None,
) -> SearchResult:
    """Run one query against one pack's index."""
    started = time.perf_counter()
    if not request.query.strip() and request.vector is None:
        raise QueryError("the query is empty — pass some words to search for")
    pool = max(settings.min_candidates, request.k * settings.candidate_multiplier)
    notes: list[str] = []
    lexical = store.lexical_top(
        query_terms(request.query),
        pool,
        weights=(settings.text_column_weight, settings.title_weight, settings.heading_weight),
        time_limit_ms=settings.lexical_time_limit_ms,
    )
    dense: list[tuple[int, float]] = []
    if request.vector is not None:
        dense = store.vector_top(np.asarray(request.vector, dtype=np.float32), pool)
    elif embed_query is not None and store.has_vectors():
        try:
            dense = store.vector_top(embed_query(request.query), pool)
        except EmbeddingError as exc:
            notes.append(f"embedding failed, answered lexically: {exc}")
            logger.warning("query embedding failed (%s) — lexical only", exc)
    mode = "hybrid" if dense else "lexical"
    fused = fuse_rrf({"lexical": lexical, "vector": dense}, k=settings.rrf_k)
    rows = store.chunks_by_ids([cid for cid, _ in fused])
    hits: list[Hit] = []
    per_file: dict[str, int] = {}
    for cid, score in fused:
        sc = rows.get(cid)
        if sc is None:
            continue
        if request.type and sc.file.type != request.type:
            continue
        if request.tags and not set(request.tags) & set(sc.file.tags):
            continue
        if per_file.get(sc.file.path, 0) >= settings.max_chunks_per_file:
            continue
        per_file[sc.file.path] = per_file.get(sc.file.path, 0) + 1
        hits.append(to_hit(sc, score))
        if len(hits) >= request.k:
            break
    return SearchResult(
        query=request.query,
        pack=slug,
        mode=mode if hits else "empty",
        hits=tuple(hits),
        took_ms=(time.perf_counter() - started) * 1000,
        notes=tuple(notes),
    )
