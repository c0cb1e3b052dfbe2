"""Fusing ranked lists: reciprocal rank fusion and weighted normalised scores.

Items are any hashable keys: chunk ids for a pack's legs, skill ids for the hub's. The pack
pipeline picks its method by name from `FUSIONS` (`retrieval.fusion` in the config): a new
method is one function registered here plus its name in `config.Fusion`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from operator import itemgetter
from typing import TypeVar

K = TypeVar("K", bound=Hashable)
Ranked = Sequence[tuple[int, float]]  # (item id, score), best first


def fuse_rrf(
    lists: Mapping[str, Sequence[tuple[K, float]]],
    k: int = 60,
    weights: Mapping[str, float] | None = None,
) -> list[tuple[K, float]]:
    """Σ w / (k + rank) over the lists an item appears in (rank 1 = best); ties keep
    first-seen order (lists in mapping order)."""
    scores: dict[K, float] = {}
    for name, ranked in lists.items():
        w = 1.0 if weights is None else weights.get(name, 1.0)
        for rank, (item, _) in enumerate(ranked, start=1):
            scores[item] = scores.get(item, 0.0) + w / (k + rank)
    return _best_first(scores)


def normalise(ranked: Ranked) -> dict[int, float]:
    """Min-max to [0, 1] within one list (a single item or a flat list scores 1)."""
    if not ranked:
        return {}
    values = [s for _, s in ranked]
    lo, hi = min(values), max(values)
    span = hi - lo
    return {item: (s - lo) / span if span > 0 else 1.0 for item, s in ranked}


def fuse_weighted(
    lists: Mapping[str, Ranked], weights: Mapping[str, float]
) -> list[tuple[int, float]]:
    """Σ w · minmax(score) over the lists an item appears in; ties keep first-seen order."""
    scores: dict[int, float] = {}
    for name, ranked in lists.items():
        w = weights.get(name, 1.0)
        for item, s in normalise(ranked).items():
            scores[item] = scores.get(item, 0.0) + w * s
    return _best_first(scores)


def _best_first(scores: dict[K, float]) -> list[tuple[K, float]]:
    """Highest score first, ties in first-seen order: ``scores`` was filled list by list in
    order, so its keys already are in first-seen order, and a stable sort (``reverse`` keeps
    ties in place) on the score alone gives what sorting on (-score, first seen) gives."""
    return sorted(scores.items(), key=itemgetter(1), reverse=True)


Fusion = Callable[[Mapping[str, Ranked], Mapping[str, float], int], list[tuple[int, float]]]
"""(ranked lists by leg, intent weights by leg, rrf_k) → one ranked list."""


def _weighted(
    lists: Mapping[str, Ranked], weights: Mapping[str, float], rrf_k: int
) -> list[tuple[int, float]]:
    return fuse_weighted(lists, weights)


def _rrf(
    lists: Mapping[str, Ranked], weights: Mapping[str, float], rrf_k: int
) -> list[tuple[int, float]]:
    # weighted RRF: 2w keeps the scale of plain RRF at w = .5 (equal weights)
    return fuse_rrf(lists, k=rrf_k, weights={n: 2 * w for n, w in weights.items()})


FUSIONS: dict[str, Fusion] = {"weighted": _weighted, "rrf": _rrf}
