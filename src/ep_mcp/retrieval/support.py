"""One-leg support: a chunk only one leg found cannot win on that leg's weight alone.

Weighted fusion gives the lexical leg's best chunk 0.6 of the fused scale and the dense leg's
0.4 however little the other leg thinks of it: any-term BM25 over a pack lets a chunk with no
dense support at all (outside the dense pool) take rank 1, and the dense leg's best can do the
same with no query word in it. A candidate ranked by one leg only has its score multiplied by
``factor`` (``retrieval.one_leg_factor``; 1 leaves it alone; ``fused`` keeps the fusion's
score), so rank 1 goes to a chunk both legs found unless the one-leg chunk leads by more than
that. Pure: candidates in, candidates out (re-sorted best first). Measured in
docs/BENCHMARKS.md ("Third round").
"""

from __future__ import annotations

from collections.abc import Sequence

from ep_mcp.retrieval.candidates import Candidate, by_score


def one_leg(c: Candidate) -> bool:
    """Found by exactly one of the two legs (a rank in one, none in the other)."""
    return (c.lexical_rank is None) != (c.vector_rank is None)


def penalise_one_leg(candidates: Sequence[Candidate], factor: float) -> list[Candidate]:
    """Fused score x ``factor`` for every candidate only one leg found; re-sorted."""
    if factor >= 1.0:
        return list(candidates)
    out = []
    for c in candidates:
        if one_leg(c):
            leg = "lexical" if c.vector_rank is None else "dense"
            c = c.moved(c.score * factor, f"{leg} leg only: x{factor:g}")
        out.append(c)
    return by_score(out)
