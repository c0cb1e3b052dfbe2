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


def query_coverage(idf: Mapping[str, float], text: str, fields: str) -> float:
    """Share of the query's IDF mass whose terms occur in ``text`` or ``fields`` (the file's
    title and the chunk's heading path), by crude stems as the confidence stage counts them."""
    mass = sum(idf.values())
    if mass <= 0:
        return 1.0  # no term to hold: nothing to take
    text_stems, field_stems = stems_of(text), stems_of(fields)
    held = sum(w for t, w in idf.items() if (s := stem(t)) in text_stems or s in field_stems)
    return held / mass


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
    out = []
    for c in candidates:
        cover = coverage.get(c.chunk_id)
        if c.lexical_score is not None and cover is not None and cover < 1.0:
            share = (c.lexical_score - lo) / span if span > 0 else 1.0
            taken = text_weight * share * (1.0 - cover**exponent)
            if taken > 0:
                c = c.moved(
                    c.score - taken, f"lexical gate: {cover:.2f} of the query, -{taken:.3f}"
                )
        out.append(c)
    return by_score(out)
