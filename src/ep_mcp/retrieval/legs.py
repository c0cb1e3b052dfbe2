"""The two legs of a search: lexical (BM25 over FTS5 terms) and vector (the query embedded).

When the query must be embedded the legs overlap on the caller's threads; an embedding that
fails, or misses its deadline, leaves the dense leg empty with a note saying why.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ep_mcp.config.model import RetrievalSettings
from ep_mcp.errors import EmbeddingError, ProviderUnavailableError
from ep_mcp.retrieval.lexical import query_terms
from ep_mcp.retrieval.source import ChunkSource, LegExecutors, QueryEmbedding
from ep_mcp.retrieval.types import SearchRequest

if TYPE_CHECKING:  # numpy is imported where vectors are touched (not by a restart's start)
    import numpy as np
    import numpy.typing as npt

logger = logging.getLogger(__name__)

LegChoice = Literal["both", "lexical", "vector"]
"""Which legs run: both (always, in serving) or one alone (benchmarks measure each leg)."""


@dataclass(frozen=True)
class Legs:
    """The raw answers of the two legs (exposed for benchmarks and tuning)."""

    terms: tuple[str, ...]
    lexical: list[tuple[int, float]]
    dense: list[tuple[int, float]]
    notes: tuple[str, ...] = ()
    query_vector: npt.NDArray[np.float32] | None = None


def run_legs(
    source: ChunkSource,
    request: SearchRequest,
    settings: RetrievalSettings,
    query: QueryEmbedding | None,
    pool: int,
    deadline: float | None = None,
    executors: LegExecutors | None = None,
    choice: LegChoice = "both",
) -> Legs:
    """Lexical (any-term BM25) and vector legs; an embedding failure leaves the dense leg empty.

    When the query must be embedded, the two legs overlap on two threads (SQLite, onnxruntime
    and sockets all release the GIL). With a ``deadline`` (``time.monotonic()`` seconds: the
    embedder calls an outside service) the embedding runs on the other thread and is waited for
    only until then; past it the answer is lexical, with a note. Without ``executors`` the
    legs run one after the other and the embedding is waited for. ``choice`` runs one leg
    alone (benchmarks).
    """
    terms = tuple(query_terms(request.query))

    def lexical_leg() -> list[tuple[int, float]]:
        if choice == "vector":
            return []
        return source.lexical_top(
            terms,
            pool,
            weights=(settings.text_column_weight, settings.title_weight, settings.heading_weight),
            time_limit_ms=settings.lexical_time_limit_ms,
        )

    embeds = (
        choice != "lexical"
        and request.vector is None
        and query is not None
        and source.has_vectors()
    )
    notes: list[str] = []
    qvec: npt.NDArray[np.float32] | None = None
    if request.vector is not None and choice != "lexical":
        import numpy as np  # on use: a restart's start imports this module, not numpy

        qvec = np.asarray(request.vector, dtype=np.float32)
        lexical = lexical_leg()
    elif not embeds or executors is None or _is_cached(query, request.query):
        lexical = lexical_leg()
        if embeds:
            qvec = _embed_now(query, request.query, notes)
    elif deadline is None:
        beside = executors.lexical.submit(lexical_leg)
        try:
            qvec = _embed_now(query, request.query, notes)
        finally:
            lexical = beside.result()
    else:
        assert query is not None
        waiting = executors.embedding.submit(query.embed_query, request.query)
        lexical = lexical_leg()
        qvec = _embed_by(waiting, deadline, settings.query_deadline_ms, notes)
    dense = source.vector_top(qvec, pool) if qvec is not None else []
    return Legs(terms, lexical, dense, tuple(notes), qvec if dense else None)


def _embed_now(
    query: QueryEmbedding | None, text: str, notes: list[str]
) -> npt.NDArray[np.float32] | None:
    assert query is not None
    try:
        return query.embed_query(text)
    except EmbeddingError as exc:
        notes.append(_embedding_note(exc))
        return None


def _embed_by(
    waiting: Future[npt.NDArray[np.float32]], deadline: float, budget_ms: int, notes: list[str]
) -> npt.NDArray[np.float32] | None:
    """The query vector if it arrives before ``deadline``; else None and a note saying why."""
    try:
        return waiting.result(timeout=max(0.0, deadline - time.monotonic()))
    except FutureTimeout:
        logger.warning("query embedding missed the %d ms deadline — lexical only", budget_ms)
        notes.append(
            f"the embedding provider did not answer within {budget_ms} ms "
            "(retrieval.query_deadline_ms) — answered lexically"
        )
        return None
    except EmbeddingError as exc:
        notes.append(_embedding_note(exc))
        return None


def _embedding_note(exc: EmbeddingError) -> str:
    if isinstance(exc, ProviderUnavailableError):  # already says why, what happens and when
        logger.info("query embedding skipped: %s", exc)
        return str(exc)
    logger.warning("query embedding failed (%s) — lexical only", exc)
    return f"embedding failed, answered lexically: {exc}"


def _is_cached(query: QueryEmbedding | None, text: str) -> bool:
    """A cached query embedding costs microseconds: then a thread hand-off would only cost."""
    return query is not None and query.is_cached(text)
