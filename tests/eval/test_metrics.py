"""One definition of each ranking metric, shared by golden sets, the hub bench and BEIR."""

from __future__ import annotations

import pytest

from ep_mcp.eval.metrics import first_rank, hit_rate, mean_reciprocal_rank


def test_first_rank_is_one_based_and_none_on_a_miss() -> None:
    assert first_rank(["a", "b", "c"], {"c", "b"}) == 2
    assert first_rank(["a"], {"z"}) is None


def test_hit_rate_and_mrr_count_misses_as_zero() -> None:
    ranks = [1, 3, None, 6]
    assert hit_rate(ranks, 1) == 0.25
    assert hit_rate(ranks, 5) == 0.5
    assert mean_reciprocal_rank(ranks) == pytest.approx((1 + 1 / 3 + 1 / 6) / 4)
    assert hit_rate([], 5) == 0.0 and mean_reciprocal_rank([]) == 0.0
