import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from ep_mcp.retrieval.candidates import Candidate
from ep_mcp.retrieval.mmr import cap_per_file, mmr_select


def unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_mmr_skips_a_near_duplicate_for_a_different_answer() -> None:
    cands = [Candidate(1, "a.md", 1.0), Candidate(2, "b.md", 0.95), Candidate(3, "c.md", 0.9)]
    vecs = {1: unit(1, 0), 2: unit(1, 0.01), 3: unit(0, 1)}
    assert [c.chunk_id for c in mmr_select(cands, vecs, lam=0.5, k=2)] == [1, 3]


def test_lambda_one_keeps_the_relevance_order() -> None:
    cands = [Candidate(i, f"{i}.md", 1.0 - i / 10) for i in range(5)]
    assert mmr_select(cands, {}, lam=1.0, k=3) == cands[:3]


def test_the_per_file_cap_keeps_the_best_chunks_of_a_file() -> None:
    cands = [
        Candidate(1, "a.md", 3),
        Candidate(2, "a.md", 2),
        Candidate(3, "a.md", 1),
        Candidate(4, "b.md", 0.5),
    ]
    assert [c.chunk_id for c in cap_per_file(cands, 2)] == [1, 2, 4]
    assert cap_per_file(cands, 0) == cands


candidates = st.lists(
    st.tuples(st.sampled_from("abcde"), st.floats(0, 1)), min_size=0, max_size=25
).map(lambda xs: [Candidate(i, f"{p}.md", s) for i, (p, s) in enumerate(xs)])


@given(candidates, st.floats(0, 1), st.integers(1, 10), st.integers(0, 3), st.integers(0, 9999))
def test_mmr_returns_a_capped_subset_without_repeats(cands, lam, k, cap, seed) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    vecs = {c.chunk_id: unit(*rng.normal(size=4)) for c in cands if c.chunk_id % 3}
    out = mmr_select(cands, vecs, lam=lam, k=k, per_file_cap=cap)
    ids = [c.chunk_id for c in out]
    assert len(ids) == len(set(ids)) <= k
    assert set(ids) <= {c.chunk_id for c in cands}
    if cap:
        for path in {c.path for c in out}:
            assert sum(1 for c in out if c.path == path) <= cap


def test_a_candidate_picked_out_of_its_place_says_which_pick_it_was() -> None:
    cands = [Candidate(1, "a.md", 1.0), Candidate(2, "b.md", 0.95), Candidate(3, "c.md", 0.9)]
    vecs = {1: unit(1, 0), 2: unit(1, 0.01), 3: unit(0, 1)}
    out = mmr_select(cands, vecs, lam=0.5, k=3)
    assert [(c.chunk_id, c.notes) for c in out] == [
        (1, ()),
        (3, ("mmr: picked #2",)),
        (2, ("mmr: picked #3",)),
    ]
    assert [c.score for c in out] == [1.0, 0.9, 0.95]  # scores stay as they were


def test_relevance_is_rescaled_over_the_pool_so_lambda_means_the_same_at_any_scale() -> None:
    vecs = {1: unit(1, 0), 2: unit(0.9, 0.4359), 3: unit(0, 1)}  # 2 is 0.9 alike 1; 3 is new
    for scale in (1.0, 100.0):
        cands = [Candidate(i, f"{i}.md", s * scale) for i, s in ((1, 10.0), (2, 9.0), (3, 8.0))]
        picked = [c.chunk_id for c in mmr_select(cands, vecs, lam=0.5, k=3)]
        assert picked == [1, 3, 2]  # 2: 0.5 x 0.5 - 0.5 x 0.9 < 3: 0 - 0


def test_a_high_lambda_keeps_relevance_ahead_of_novelty() -> None:
    vecs = {1: unit(1, 0), 2: unit(0.9, 0.4359), 3: unit(0, 1)}
    cands = [Candidate(i, f"{i}.md", s) for i, s in ((1, 10.0), (2, 9.0), (3, 8.0))]
    assert [c.chunk_id for c in mmr_select(cands, vecs, lam=0.9, k=3)] == [1, 2, 3]


def test_lambda_one_keeps_the_incoming_order_even_when_scores_disagree() -> None:
    cands = [Candidate(1, "a.md", 0.5), Candidate(2, "b.md", 1.0)]
    vecs = {1: unit(1, 0), 2: unit(0, 1)}
    assert mmr_select(cands, vecs, lam=1.0, k=2) == cands


def test_a_candidate_without_a_vector_is_never_penalised() -> None:
    cands = [Candidate(1, "a.md", 1.0), Candidate(2, "b.md", 0.5), Candidate(3, "c.md", 0.6)]
    vecs = {1: unit(1, 0), 3: unit(1, 0)}  # 3 duplicates 1; 2 has no vector
    assert [c.chunk_id for c in mmr_select(cands, vecs, lam=0.5, k=3)] == [1, 2, 3]


def test_after_a_pick_without_a_vector_near_duplicates_are_still_told_apart() -> None:
    scores = {1: 1.0, 2: 0.9, 3: 0.85, 4: 0.8}
    cands = [Candidate(i, f"{i}.md", s) for i, s in scores.items()]
    vecs = {2: unit(1, 0), 3: unit(1, 0), 4: unit(0, 1)}  # the first pick has no vector
    assert [c.chunk_id for c in mmr_select(cands, vecs, lam=0.5, k=3)] == [1, 2, 4]


def test_mmr_caps_nothing_by_default_and_reorders_by_relevance() -> None:
    cands = [Candidate(1, "a.md", 0.5), Candidate(2, "a.md", 1.0)]
    vecs = {1: unit(1, 0), 2: unit(0, 1)}
    assert [c.chunk_id for c in mmr_select(cands, vecs, lam=0.5, k=2)] == [2, 1]


def test_without_any_vector_mmr_keeps_the_relevance_order() -> None:
    cands = [Candidate(1, "a.md", 1.0), Candidate(2, "b.md", 0.5), Candidate(3, "c.md", 0.75)]
    assert [c.chunk_id for c in mmr_select(cands, {}, lam=0.5, k=3)] == [1, 3, 2]


def test_mmr_stops_at_k_and_applies_the_per_file_cap_first() -> None:
    cands = [Candidate(1, "a.md", 1.0), Candidate(2, "a.md", 0.9), Candidate(3, "b.md", 0.1)]
    vecs = {1: unit(1, 0), 2: unit(0, 1), 3: unit(0, 1)}
    assert [c.chunk_id for c in mmr_select(cands, vecs, lam=0.5, k=1)] == [1]
    capped = mmr_select(cands, vecs, lam=0.5, k=3, per_file_cap=1)
    assert [c.chunk_id for c in capped] == [1, 3]


def test_a_negative_cap_means_no_cap() -> None:
    cands = [Candidate(1, "a.md", 1.0), Candidate(2, "a.md", 0.9)]
    assert cap_per_file(cands, -1) == cands
    assert cap_per_file(cands, 1) == cands[:1]
