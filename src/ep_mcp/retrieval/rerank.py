"""The rerank stage: a Protocol for what scores (query, passage) pairs, and the stage itself.

The rerank runs over a wide pool *before* the k cut, so it can lift a hit from rank 20 to
rank 1 (the reference could only reorder the final k). Each passage is the chunk's text, or
its best window when the chunk is longer than the reranker reads. The rerankers themselves
(HTTP rerank APIs, a chat model, an ONNX cross-encoder) live in ``ep_mcp.index.rerank``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from ep_mcp.errors import RerankError
from ep_mcp.retrieval.candidates import Candidate

_WORD = re.compile(r"\w+", re.UNICODE)


@runtime_checkable
class Reranker(Protocol):
    @property
    def name(self) -> str: ...

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """One relevance score per passage (higher is better); raises RerankError."""
        ...


def best_window(query: str, text: str, max_chars: int) -> str:
    """``text`` if it fits in ``max_chars``, else the window of that size (starting at a
    paragraph or line start, or a word) holding the most distinct query words — the earliest
    such window on a tie, so a chunk that answers in its first lines keeps them."""
    if len(text) <= max_chars:
        return text
    words = {w.casefold() for w in _WORD.findall(query)}
    starts = sorted({0, *(m.end() for m in re.finditer(r"\n+|\s+", text))})
    step = max(1, max_chars // 4)  # candidate starts at least a quarter window apart
    best, best_hits, last = 0, -1, -step
    for start in starts:
        if start - last < step or start >= len(text):
            continue
        last = start
        window = text[start : start + max_chars]
        hits = len(words & {w.casefold() for w in _WORD.findall(window)})
        if hits > best_hits:
            best, best_hits = start, hits
        if start + max_chars >= len(text):
            break
    return text[best : best + max_chars]


def rerank(
    query: str,
    candidates: Sequence[Candidate],
    text_of: Callable[[Candidate], str],
    reranker: Reranker,
    pool: int,
    max_chars: int,
) -> list[Candidate]:
    """Reorder the first ``pool`` candidates by the reranker; the rest keep their place after.

    The reranker decides the order only: the i-th candidate of the new order takes the i-th
    best score the pool had, so every later stage (MMR, the graph's decay, confidence) reads
    scores on the scale it was built for, whatever scale the reranker scores on (a logit, a
    0-10 rating). Its own score is in the candidate's note. A failing reranker raises
    (``RerankError``) and the caller keeps the order it had."""
    head, tail = list(candidates[:pool]), list(candidates[pool:])
    if not head:
        return list(candidates)
    scores = reranker.score(query, [best_window(query, text_of(c), max_chars) for c in head])
    ranked = sorted(zip(head, scores, strict=True), key=lambda cs: -cs[1])
    places = sorted((c.score for c in head), reverse=True)
    out = [
        c.moved(place, f"rerank {reranker.name}: {s:.4f} (was #{head.index(c) + 1})")
        for (c, s), place in zip(ranked, places, strict=True)
    ]
    floor = places[-1]
    return out + [
        c if c.score < floor else c.moved(floor - (i + 1) * 1e-6, "below the rerank pool")
        for i, c in enumerate(tail)
    ]


def rerank_or_keep(
    query: str,
    candidates: Sequence[Candidate],
    text_of: Callable[[Candidate], str],
    reranker: Reranker,
    pool: int,
    max_chars: int,
) -> tuple[list[Candidate], str | None]:
    """``rerank``, or the candidates as they were and the note saying why the reranker failed
    (a reranker is optional: it never fails a query)."""
    try:
        return rerank(query, candidates, text_of, reranker, pool, max_chars), None
    except RerankError as exc:
        return list(candidates), f"{exc} — results are in their unreranked order"
