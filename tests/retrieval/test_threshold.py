import pytest

from ep_mcp.retrieval.candidates import Candidate
from ep_mcp.retrieval.threshold import (
    Evidence,
    ThresholdSettings,
    cosine_margin,
    drop_far_below,
    gather_evidence,
    is_negative,
    term_coverage,
)

FLOORS = ThresholdSettings(cosine_floor=0.5, margin_floor=0.1, coverage_floor=0.6)


def ev(cos: float | None, margin: float | None, coverage: float) -> Evidence:
    return Evidence(cos, margin, coverage, 3)


def test_term_coverage_counts_query_terms_found_on_crude_stems() -> None:
    assert term_coverage(["inverter", "sizing"], "Sizing the inverters") == 1.0
    assert term_coverage(["inverter", "battery"], "an inverter") == 0.5
    assert term_coverage([], "anything") == 0.0


def test_margin_needs_a_crowd_to_compare_with() -> None:
    assert cosine_margin([0.9] * 5) is None
    assert cosine_margin([0.9] + [0.5] * 30) == pytest.approx(0.4)


@pytest.mark.parametrize(
    ("evidence", "negative"),
    [
        (ev(0.2, 0.01, 0.0), True),  # nothing on either leg
        (ev(0.2, 0.01, 0.6), False),  # coverage exactly at the floor answers
        (ev(0.2, 0.01, 0.59), True),  # just below
        (ev(0.5, 0.1, 0.0), False),  # dense leg exactly at both floors
        (ev(0.5, 0.09, 0.0), True),  # close, but not above the crowd
        (ev(0.49, 0.5, 0.0), True),  # above the crowd, but not close
        (ev(0.5, None, 0.0), False),  # too few chunks to have a crowd: cosine decides
        (ev(None, None, 0.6), False),  # lexical only: coverage decides
        (ev(None, None, 0.5), True),
    ],
)
def test_activation_edges(evidence: Evidence, negative: bool) -> None:
    assert is_negative(evidence, FLOORS) is negative


def test_with_every_floor_at_zero_nothing_is_negative() -> None:
    assert not is_negative(ev(0.0, 0.0, 0.0), ThresholdSettings())
    assert not is_negative(ev(None, None, 0.0), ThresholdSettings())


def test_gather_evidence_takes_the_best_covered_lexical_hit() -> None:
    got = gather_evidence(["solar", "panel"], ["solar farm", "a solar panel"], [0.7, 0.6])
    assert (got.coverage, got.top_cosine, got.cosine_margin) == (1.0, 0.7, None)


def test_relative_drop_keeps_hits_at_or_above_the_ratio_of_the_best() -> None:
    cands = [Candidate(i, f"f{i}.md", score=s) for i, s in enumerate([1.0, 0.5, 0.49])]
    assert [c.chunk_id for c in drop_far_below(cands, 0.5)] == [0, 1]
    assert drop_far_below(cands, 0.0) == cands
    assert drop_far_below([], 0.5) == []
