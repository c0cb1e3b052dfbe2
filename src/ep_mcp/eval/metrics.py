"""Ranking metrics, one definition each: first-hit rank, hit@k, MRR, nDCG@k, recall@k and the
latency percentile. Golden sets (packs and hub), BEIR and the benchmarks all score with these.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Container, Hashable, Iterable, Mapping, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


def first_rank(ranked: Iterable[K], wanted: Container[K]) -> int | None:
    """1-based rank of the first wanted item, or None when none was returned."""
    return next((i for i, item in enumerate(ranked, start=1) if item in wanted), None)


def hit_rate(ranks: Sequence[int | None], k: int) -> float:
    """hit@k: the share of queries whose first wanted item ranks k or better (0 with none)."""
    return statistics.fmean([r is not None and r <= k for r in ranks]) if ranks else 0.0


def mean_reciprocal_rank(ranks: Sequence[int | None]) -> float:
    """MRR: the mean of 1 / rank, a miss counting 0 (0 with no queries)."""
    return statistics.fmean([1 / r if r else 0.0 for r in ranks]) if ranks else 0.0


def ndcg_at(ranked: Sequence[str], relevant: Mapping[str, int], k: int = 10) -> float:
    """nDCG@k with graded relevance (gain 2^rel - 1)."""
    dcg = sum((2 ** relevant.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum((2**r - 1) / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at(ranked: Sequence[str], relevant: Mapping[str, int], k: int = 100) -> float:
    """The share of the relevant items found in the top k."""
    wanted = {d for d, r in relevant.items() if r > 0}
    return len(wanted & set(ranked[:k])) / len(wanted) if wanted else 0.0


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q``-th percentile (0..100) of ``values``; 0 with none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[pos]
