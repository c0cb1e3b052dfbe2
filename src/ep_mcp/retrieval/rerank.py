"""The reranker seam: a Protocol, a cross-encoder behind a lazy import, and the stage itself.

The rerank runs over a wide pool *before* the k cut, so it can lift a hit from rank 25 to
rank 1 (the reference could only reorder the final k).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from ep_mcp.config import RerankerSettings
from ep_mcp.errors import ConfigError
from ep_mcp.retrieval.candidates import Candidate

logger = logging.getLogger(__name__)


@runtime_checkable
class Reranker(Protocol):
    @property
    def name(self) -> str: ...

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """One relevance score per passage (higher is better)."""
        ...


class CrossEncoderReranker:
    """sentence-transformers CrossEncoder, loaded on first use (extra ``ep-mcp[rerank]``)."""

    def __init__(self, model: str, max_chars: int = 512) -> None:
        self.model = model
        self.max_chars = max_chars
        self._encoder: Any = None

    @property
    def name(self) -> str:
        return f"cross-encoder/{self.model}"

    def _load(self) -> Any:
        if self._encoder is not None:
            return self._encoder
        try:
            from sentence_transformers import CrossEncoder  # type: ignore[import-not-found]
        except ImportError as exc:
            raise ConfigError(
                "reranker.enabled is true but sentence-transformers is not installed — "
                "install `ep-mcp[rerank]` or set reranker.enabled: false"
            ) from exc
        try:
            self._encoder = CrossEncoder(self.model, local_files_only=True)
        except Exception as exc:  # any loader failure: the model is not available offline
            raise ConfigError(
                f"reranker model {self.model!r} is not available offline ({exc}) — download it "
                "once with network access, point reranker.model at a local folder, or set "
                "reranker.enabled: false"
            ) from exc
        return self._encoder

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        encoder = self._load()
        pairs = [(query, p[: self.max_chars]) for p in passages]
        return [float(s) for s in encoder.predict(pairs, show_progress_bar=False)]


def rerank(
    query: str,
    candidates: Sequence[Candidate],
    text_of: Callable[[Candidate], str],
    reranker: Reranker,
    pool: int,
) -> list[Candidate]:
    """Reorder the first ``pool`` candidates by the reranker; the rest keep their place after.
    The reranker's score becomes the ranking score (the note keeps the fused one)."""
    head, tail = list(candidates[:pool]), list(candidates[pool:])
    if not head:
        return list(candidates)
    scores = reranker.score(query, [text_of(c) for c in head])
    ranked = sorted(zip(head, scores, strict=True), key=lambda cs: -cs[1])
    out = [
        c.moved(s, f"rerank {reranker.name}: {s:.4f} (was #{head.index(c) + 1})") for c, s in ranked
    ]
    floor = min(scores) if scores else 0.0
    return out + [
        c.moved(floor - 1.0 - i * 1e-6, "below the rerank pool") for i, c in enumerate(tail)
    ]


def make_reranker(settings: RerankerSettings) -> Reranker | None:
    """The configured cross-encoder (loaded on first query), or None when disabled."""
    if not settings.enabled:
        return None
    return CrossEncoderReranker(settings.model, settings.max_chars)
