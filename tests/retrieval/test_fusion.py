import pytest
from hypothesis import given
from hypothesis import strategies as st

from ep_mcp.retrieval.fusion import FUSIONS, fuse_rrf, fuse_weighted, normalise

ranked = st.lists(
    st.tuples(st.integers(0, 40), st.floats(-100, 100)), max_size=30, unique_by=lambda t: t[0]
)


def test_rrf_sums_reciprocal_ranks_over_the_lists() -> None:
    fused = dict(fuse_rrf({"a": [(1, 9.0), (2, 8.0)], "b": [(2, 0.9)]}, k=60))
    assert fused[2] == 1 / 62 + 1 / 61
    assert fused[1] == 1 / 61


def test_weighted_fusion_normalises_each_list_before_weighting() -> None:
    fused = dict(
        fuse_weighted(
            {"lex": [(1, 30.0), (2, 10.0)], "vec": [(2, 0.9), (3, 0.5)]}, {"lex": 0.3, "vec": 0.7}
        )
    )
    assert fused[1] == 0.3  # best lexical, absent from the vector list
    assert fused[2] == 0.7  # worst lexical (0), best vector (1)
    assert fused[3] == 0.0


def test_a_flat_list_normalises_to_one() -> None:
    assert normalise([(1, 2.0), (2, 2.0)]) == {1: 1.0, 2: 1.0}


@given(ranked, ranked)
def test_rrf_is_deterministic_and_covers_every_item(a, b) -> None:  # type: ignore[no-untyped-def]
    lists = {"lex": a, "vec": b}
    first, second = fuse_rrf(lists), fuse_rrf(lists)
    assert first == second
    assert {i for i, _ in first} == {i for i, _ in a} | {i for i, _ in b}
    scores = [s for _, s in first]
    assert scores == sorted(scores, reverse=True)


@given(ranked)
def test_ties_keep_the_order_items_were_first_seen(a) -> None:  # type: ignore[no-untyped-def]
    flat = [(item, 1.0) for item, _ in a]
    fused = fuse_weighted({"only": flat}, {"only": 1.0})
    assert [i for i, _ in fused] == [i for i, _ in a]


@given(ranked, ranked)
def test_weighted_fusion_is_order_stable(a, b) -> None:  # type: ignore[no-untyped-def]
    lists = {"lex": a, "vec": b}
    assert fuse_weighted(lists, {"lex": 0.3, "vec": 0.7}) == fuse_weighted(
        lists, {"lex": 0.3, "vec": 0.7}
    )


def test_rrf_ranks_start_at_one_and_weights_multiply() -> None:
    fused = fuse_rrf({"a": [(1, 0.0), (2, 0.0)], "b": [(3, 0.0)]}, k=1, weights={"a": 2.0})
    assert fused == [(1, 2 / 2), (2, 2 / 3), (3, 1 / 2)]  # b has no weight: 1
    assert fuse_rrf({"a": [(1, 0.0)]})[0][1] == 1 / 61  # k 60 by default


def test_rrf_ties_keep_the_first_seen_order_across_lists() -> None:
    assert [i for i, _ in fuse_rrf({"a": [(5, 1.0)], "b": [(4, 1.0)]})] == [5, 4]


def test_a_list_weight_missing_from_the_weights_counts_one() -> None:
    fused = dict(fuse_weighted({"x": [(1, 3.0), (2, 1.0)], "y": [(2, 5.0)]}, {"x": 0.5}))
    assert fused == {1: 0.5, 2: 0.0 + 1.0}


def test_normalise_spans_the_list_from_zero_to_one() -> None:
    assert normalise([(1, 4.0), (2, 3.0), (3, 2.0)]) == {1: 1.0, 2: 0.5, 3: 0.0}
    assert normalise([(7, -3.0)]) == {7: 1.0}
    assert normalise([]) == {}


@pytest.mark.parametrize(("name", "weights"), [("weighted", (0.3, 0.7)), ("rrf", (0.5, 0.5))])
def test_the_configured_fusion_is_picked_by_name(name: str, weights: tuple[float, float]) -> None:
    lists = {"lexical": [(1, 9.0), (2, 1.0)], "vector": [(2, 0.9), (1, 0.1)]}
    fused = dict(FUSIONS[name](lists, dict(zip(lists, weights, strict=True)), 10))
    if name == "rrf":  # weighted RRF: twice the weight, so equal weights are plain RRF
        assert fused == {1: pytest.approx(1 / 11 + 1 / 12), 2: pytest.approx(1 / 12 + 1 / 11)}
    else:
        assert fused == {1: pytest.approx(0.3), 2: pytest.approx(0.7)}


def test_weighted_rrf_doubles_the_leg_weights() -> None:
    lists = {"lexical": [(1, 9.0)], "vector": [(2, 0.9)]}
    fused = dict(FUSIONS["rrf"](lists, {"lexical": 0.2, "vector": 0.8}, 1))
    assert fused == {1: pytest.approx(0.4 / 2), 2: pytest.approx(1.6 / 2)}
