"""The lexical gate alone: how much of a candidate's lexical share it takes back, and from whom."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ep_mcp.retrieval.candidates import Candidate
from ep_mcp.retrieval.lexgate import (
    FULL,
    bm25_range,
    gate_lexical,
    query_coverage,
    query_stems,
)


def _c(cid: int, score: float, bm25: float | None) -> Candidate:
    rank = None if bm25 is None else cid
    return Candidate(cid, f"{cid}.md", score, rank, bm25, 1, 0.5, fused=score)


def test_a_chunk_holding_part_of_the_query_loses_that_part_of_its_lexical_share() -> None:
    # BM25 8 is the top of the leg (share 1), 2 its bottom; text weight 0.6
    partial, whole = _c(1, 0.9, 8.0), _c(2, 0.8, 6.0)
    out = gate_lexical([partial, whole], {1: 0.25, 2: 1.0}, 0.6, (2.0, 8.0), 0.5)
    # partial: 0.9 - 0.6 x 1 x (1 - 0.25 ** 0.5) = 0.6; whole keeps everything
    assert [(c.chunk_id, round(c.score, 6)) for c in out] == [(2, 0.8), (1, 0.6)]
    assert out[0] is whole
    assert out[1].notes[-1] == "lexical gate: 0.25 of the query, -0.300"
    assert out[1].fused == 0.9  # the fusion's own score is kept for --explain


def test_the_exponent_sets_how_much_a_partial_match_keeps() -> None:
    partial = _c(1, 1.0, 8.0)
    kept = [
        gate_lexical([partial], {1: 0.25}, 0.6, (0.0, 8.0), e)[0].score for e in (0.5, 1.0, 2.0)
    ]
    assert kept == pytest.approx([0.7, 0.55, 0.4375])


def test_a_dense_only_candidate_and_an_exponent_of_zero_are_left_alone() -> None:
    dense_only = _c(3, 0.5, None)
    assert gate_lexical([dense_only], {3: 0.0}, 0.6, (0.0, 1.0), 0.5) == [dense_only]
    cands = [_c(1, 0.9, 8.0), _c(2, 0.8, 6.0)]
    assert gate_lexical(cands, {1: 0.0, 2: 0.0}, 0.6, (2.0, 8.0), 0.0) == cands


def test_the_bottom_of_the_lexical_leg_has_no_lexical_share_to_lose() -> None:
    bottom = _c(1, 0.4, 2.0)
    assert gate_lexical([bottom], {1: 0.0}, 0.6, (2.0, 8.0), 0.5)[0].score == 0.4


def test_coverage_counts_the_file_title_and_headings_as_well_as_the_text() -> None:
    idf = query_stems({"inverter": 3.0, "sizing": 1.0})
    assert query_coverage(idf, "Sizing the inverters", "") == 1.0  # crude stems: inverters
    assert query_coverage(idf, "Pick a battery", "Inverter choice") == 0.75
    assert query_coverage(idf, "Pick a battery", "Wiring") == 0.0
    assert query_coverage(query_stems({}), "anything", "") == 1.0
    assert bm25_range([(1, 3.0), (2, 9.0), (3, 1.5)]) == (1.5, 9.0) and bm25_range([]) == (0, 0)


@given(
    st.lists(
        st.tuples(st.floats(0, 1), st.floats(0, 10), st.floats(0, 1)), min_size=1, max_size=12
    ),
    st.floats(0, 3),
)
def test_the_gate_never_raises_a_score_and_keeps_every_candidate(
    rows: list[tuple[float, float, float]], exponent: float
) -> None:
    rows = sorted(rows, key=lambda r: -r[0])  # fused candidates come best first
    cands = [_c(i, s, b) for i, (s, b, _) in enumerate(rows)]
    cover = {i: c for i, (_, _, c) in enumerate(rows)}
    out = gate_lexical(
        cands, cover, 0.6, bm25_range([(i, b) for i, (_, b, _) in enumerate(rows)]), exponent
    )
    assert sorted(c.chunk_id for c in out) == list(range(len(rows)))
    before = {c.chunk_id: c.score for c in cands}
    assert all(c.score <= before[c.chunk_id] + 1e-12 for c in out)
    assert [c.score for c in out] == sorted((c.score for c in out), reverse=True)


def test_a_flat_lexical_leg_gives_every_lexical_hit_the_full_share() -> None:
    # one lexical hit (or equal BM25s) normalises to 1, as the weighted fusion scored it
    out = gate_lexical([_c(1, 0.9, 5.0)], {1: 0.25}, 0.6, (5.0, 5.0), 0.5)
    assert out[0].score == pytest.approx(0.9 - 0.6 * 0.5)


def test_a_narrow_bm25_range_is_normalised_like_a_wide_one() -> None:
    # span 0.5: the top keeps share 1, the middle 0.5, the bottom 0 (as over a span of 5)
    cands = [_c(1, 1.0, 0.7), _c(2, 0.9, 0.45), _c(3, 0.8, 0.2)]
    out = gate_lexical(cands, {1: 0.25, 2: 0.25, 3: 0.25}, 0.6, (0.2, 0.7), 1.0)
    assert {c.chunk_id: c.score for c in out} == pytest.approx({1: 0.55, 2: 0.675, 3: 0.8})


def test_nothing_taken_leaves_the_candidate_as_it_was() -> None:
    bottom, full = _c(1, 0.4, 2.0), _c(2, 0.3, 8.0)
    # the bottom of the leg has no share; a coverage short of 1 by rounding only is full
    out = gate_lexical([bottom, full], {1: 0.0, 2: FULL}, 0.6, (2.0, 8.0), 0.5)
    assert out[0] is bottom and out[1] is full


def test_query_stems_share_the_idf_mass_and_a_massless_query_has_none() -> None:
    assert query_stems({"kiln": 0.25, "glaze": 0.75}) == (("kiln", 0.25), ("glaze", 0.75))
    assert query_stems({"the": 0.0, "a": 0.0}) == ()
