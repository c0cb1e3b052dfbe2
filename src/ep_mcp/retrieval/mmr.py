"""Maximal marginal relevance with a per-file cap (SPEC §4.7)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ep_mcp.retrieval.candidates import Candidate

if TYPE_CHECKING:  # numpy is imported where vectors are touched (not by a restart's start)
    import numpy as np
    import numpy.typing as npt

Vectors = Mapping[int, "npt.NDArray[np.float32]"]


def cap_per_file(candidates: Sequence[Candidate], cap: int) -> list[Candidate]:
    """At most ``cap`` chunks of one file, in the incoming order (cap ≤ 0: no cap)."""
    if cap <= 0:
        return list(candidates)
    seen: dict[str, int] = {}
    out = []
    for c in candidates:
        if seen.get(c.path, 0) < cap:
            seen[c.path] = seen.get(c.path, 0) + 1
            out.append(c)
    return out


def mmr_select(
    candidates: Sequence[Candidate],
    vectors: Vectors,
    *,
    lam: float,
    k: int,
    per_file_cap: int = 0,
) -> list[Candidate]:
    """Pick up to ``k`` by argmax λ·rel - (1-λ)·max cos(selected); scores stay as they were.

    Relevance is the candidate score rescaled to [0, 1] over the pool, so λ means the same
    whatever the fusion. A candidate without a vector is never penalised. λ = 1 keeps the
    incoming order. Always a subset of the input, in selection order.
    """
    pool = cap_per_file(candidates, per_file_cap)
    if lam >= 1.0 or len(pool) <= 1:
        return pool[:k]
    import numpy as np  # on use: a restart's start imports this module, not numpy

    scores = np.array([c.score for c in pool], dtype=np.float64)
    span = scores.max() - scores.min()
    rel = (scores - scores.min()) / span if span > 0 else np.ones_like(scores)
    dim = next((len(v) for v in vectors.values()), 0)
    mat = np.zeros((len(pool), max(dim, 1)), dtype=np.float32)
    has = np.zeros(len(pool), dtype=bool)
    for i, c in enumerate(pool):
        v = vectors.get(c.chunk_id)
        if v is not None and dim:
            mat[i] = v
            has[i] = True
    sims = mat @ mat.T
    max_sim = np.full(len(pool), -np.inf)
    chosen: list[int] = []
    left = list(range(len(pool)))
    while left and len(chosen) < k:
        penalty = np.where(np.isfinite(max_sim[left]) & has[left], max_sim[left], 0.0)
        value = lam * rel[left] - (1 - lam) * penalty
        pick = left[int(np.argmax(value))]  # argmax takes the first of ties: order-stable
        chosen.append(pick)
        left.remove(pick)
        if has[pick]:
            max_sim = np.maximum(max_sim, np.where(has, sims[pick], -np.inf))
    out = []
    for position, i in enumerate(chosen):
        c = pool[i]
        out.append(c.noted(f"mmr: picked #{position + 1}") if position != i else c)
    return out
