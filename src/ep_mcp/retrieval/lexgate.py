"""Lexical gate: a chunk's lexical share of the fused score follows how much of the query it holds.

Any-term BM25 over a pack gives a chunk that matches two common words of a long question the
lexical leg's full weight (0.6 of the fused scale at the top of the list) however many of the
question's other words it lacks; strict-AND BM25 would not have found it at all. The gate keeps
any-term recall and takes the weight back: a candidate's lexical part of the fused score
(``text_weight`` x its min-max normalised BM25) is multiplied by ``coverage ** exponent``, where
``coverage`` is the IDF-weighted share of the query's terms found in the chunk's text, its file's
title or its heading path (``retrieval.lexical_gate``; 0 leaves the fusion alone). A chunk that
holds every query term keeps its lexical weight; one that holds a rare term keeps most of it; one
that shares only common words keeps little. The dense part is untouched. Pure: candidates in,
candidates out (re-sorted best first). Measured in docs/BENCHMARKS.md ("Seventh round").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ep_mcp.retrieval.candidates import Candidate, by_score
from ep_mcp.retrieval.confidence import stems_of
from ep_mcp.text import stem

FULL = 1.0 - 1e-9  # a coverage summed from shares may fall short of 1 by rounding

QueryStems = tuple[tuple[str, float], ...]
"""The query's terms as (crude stem, share of the query's IDF mass), computed once a query."""


def query_stems(idf: Mapping[str, float]) -> QueryStems:
    """Each query term's stem and its share of the IDF mass (no mass: no terms)."""
    mass = sum(idf.values())
    return tuple((stem(t), w / mass) for t, w in idf.items()) if mass > 0 else ()


def query_coverage(stems: QueryStems, text: str, fields: str) -> float:
    """Share of the query's IDF mass whose terms occur in ``text`` or ``fields`` (the file's
    title and the chunk's heading path), by crude stems as the confidence stage counts them;
    a query with no weighted term is covered (nothing to take)."""
    if not stems:
        return 1.0
    in_text, in_fields = stems_of(text), stems_of(fields)
    return sum(w for s, w in stems if s in in_text or s in in_fields)


def bm25_range(lexical: Sequence[tuple[int, float]]) -> tuple[float, float]:
    """The lexical leg's lowest and highest BM25 (the min-max the weighted fusion used)."""
    values = [s for _, s in lexical]
    return (min(values), max(values)) if values else (0.0, 0.0)


def gate_lexical(
    candidates: Sequence[Candidate],
    coverage: Mapping[int, float],
    text_weight: float,
    bm25: tuple[float, float],
    exponent: float,
) -> list[Candidate]:
    """Each lexically found candidate's score less ``text_weight`` x normalised BM25 x
    (1 - coverage ** ``exponent``); ``coverage`` by chunk id (missing: 1, nothing taken)."""
    if exponent <= 0:
        return list(candidates)
    lo, hi = bm25
    span = hi - lo
    per_bm25 = text_weight / span if span > 0 else 0.0
    out = []
    for c in candidates:
        bm25_score, cover = c.lexical_score, coverage.get(c.chunk_id)
        if bm25_score is not None and cover is not None and cover < FULL:
            share = text_weight if span <= 0 else (bm25_score - lo) * per_bm25
            taken = share * (1.0 - cover**exponent)
            if taken > 0:
                c = c.moved(
                    c.score - taken, f"lexical gate: {cover:.2f} of the query, -{taken:.3f}"
                )
        out.append(c)
    return by_score(out)
