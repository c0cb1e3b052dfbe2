"""Fusing ranked lists: reciprocal rank fusion and weighted normalised scores."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

Ranked = Sequence[tuple[int, float]]  # (item id, score), best first


def fuse_rrf(lists: Mapping[str, Ranked], k: int = 60,
             weights: Mapping[str, float] | None = None) -> list[tuple[int, float]]:
    """Σ w / (k + rank) over the lists an item appears in; ties keep first-seen order."""
    scores: dict[int, float] = {}
    for name, ranked in lists.items():
        w = 1.0 if weights is None else weights.get(name, 1.0)
        for rank, (item, _) in enumerate(ranked, start=1):
            scores[item] = scores.get(item, 0.0) + w / (k + rank)
    order = {item: i for i, item in enumerate(scores)}
    return sorted(scores.items(), key=lambda kv: (-kv[1], order[kv[0]]))
