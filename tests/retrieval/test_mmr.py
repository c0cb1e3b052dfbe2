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
