from hypothesis import given
from hypothesis import strategies as st

from ep_mcp.retrieval.fusion import fuse_rrf, fuse_weighted, normalise

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
