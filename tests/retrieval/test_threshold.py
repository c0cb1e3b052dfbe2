import dataclasses

import pytest

from ep_mcp.retrieval.candidates import Candidate
from ep_mcp.retrieval.threshold import (
    HYBRID,
    LEXICAL,
    Evidence,
    Floor,
    activation,
    cosine_margin,
    drop_far_below,
    gather_evidence,
    judge,
    term_coverage,
)

FLOORS = Floor(hybrid=0.43, coverage_weight=0.2, lexical=0.25, calibrated_for="local/minilm")
NO_FLOORS = Floor(hybrid=0.0, coverage_weight=0.2, lexical=0.0, calibrated_for="*")


def is_negative(evidence: Evidence, floor: Floor, model: str | None) -> bool:
    return not judge(evidence, floor, model).answered


def ev(cos: float | None, coverage: float) -> Evidence:
    return Evidence(cos, None, coverage, 3)


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
        (ev(0.20, 0.25), True),  # 0.25 activation: nothing close, few terms
        (ev(0.33, 0.5), False),  # exactly at the floor (0.33 + 0.1) answers
        (ev(0.329, 0.5), True),  # just below
        (ev(0.43, 0.0), False),  # the dense leg alone can carry a paraphrase
        (ev(0.2, 1.0), True),  # every term matched, but the meaning is far: still negative
        (ev(None, 0.25), False),  # lexical only: coverage decides, at the floor answers
        (ev(None, 0.24), True),
    ],
)
def test_activation_edges(evidence: Evidence, negative: bool) -> None:
    assert is_negative(evidence, FLOORS, "local/minilm-dq") is negative


def test_with_a_model_it_was_not_calibrated_for_coverage_alone_decides() -> None:
    other = "openai/text-embedding-3-small"
    assert is_negative(ev(0.1, 0.0), FLOORS, other)  # was: the floor skipped, noise answered
    assert is_negative(ev(0.9, 0.2), FLOORS, other)  # a foreign cosine lifts nothing
    assert not is_negative(ev(0.1, 0.25), FLOORS, other)
    assert judge(ev(0.9, 0.2), FLOORS, other).rule == LEXICAL
    assert judge(ev(0.9, 0.2), FLOORS, "local/minilm-dq").rule == HYBRID
    assert is_negative(ev(0.1, 0.3), dataclasses.replace(FLOORS, calibrated_for="*"), "any")


def test_with_every_floor_at_zero_nothing_is_negative() -> None:
    assert not is_negative(ev(0.0, 0.0), NO_FLOORS, "m")
    assert not is_negative(ev(None, 0.0), NO_FLOORS, None)


def test_gather_evidence_takes_the_best_covered_lexical_hit() -> None:
    got = gather_evidence(["solar", "panel"], ["solar farm", "a solar panel"], [0.7, 0.6])
    assert (got.coverage, got.top_cosine, got.cosine_margin) == (1.0, 0.7, None)


def test_relative_drop_keeps_hits_at_or_above_the_ratio_of_the_best() -> None:
    cands = [Candidate(i, f"f{i}.md", score=s) for i, s in enumerate([1.0, 0.5, 0.49])]
    assert [c.chunk_id for c in drop_far_below(cands, 0.5)] == [0, 1]
    assert drop_far_below(cands, 0.0) == cands
    assert drop_far_below([], 0.5) == []


def test_the_evidence_describes_itself_for_explain() -> None:
    assert Evidence(0.7, 0.21234, 0.5, 2).describe() == (
        "top cosine 0.700, cosine margin 0.212, term coverage 0.50"
    )
    assert Evidence(None, None, 1.0, 2).describe() == (
        "top cosine n/a, cosine margin n/a, term coverage 1.00"
    )


def test_the_margin_compares_the_best_with_ranks_ten_to_thirty() -> None:
    assert cosine_margin([0.9] * 11) is None
    assert cosine_margin([0.9] + [0.8] * 8 + [0.5, 0.4, 0.3]) == pytest.approx(0.5)
    # ranks 2..9 and past 30 do not count
    cosines = [0.9] + [0.0] * 8 + [0.6] * 21 + [0.0] * 10
    assert cosine_margin(cosines) == pytest.approx(0.3)


def test_gather_evidence_without_lexical_hits_or_dense_leg() -> None:
    got = gather_evidence(["a", "b", "c"], [], [])
    assert got == Evidence(top_cosine=None, cosine_margin=None, coverage=0.0, terms=3)
    crowd = [0.9] + [0.5] * 11
    assert gather_evidence(["a"], ["a"], crowd).cosine_margin == pytest.approx(0.4)


def test_activation_is_the_best_cosine_plus_the_weighted_coverage() -> None:
    assert activation(ev(0.3, 0.5), 0.2) == pytest.approx(0.4)
    assert activation(ev(None, 0.5), 0.2) is None


def test_a_floor_calibrated_for_one_model_reads_coverage_alone_when_the_model_is_unknown() -> None:
    assert is_negative(ev(0.1, 0.0), FLOORS, None)
    assert not is_negative(ev(0.1, 0.5), FLOORS, None)


def test_terms_no_document_holds_lower_the_hybrid_score_by_the_penalty() -> None:
    floor = dataclasses.replace(FLOORS, unknown_penalty=0.5)
    held = Evidence(0.4, None, 0.5, 4)  # 0.4 + 0.2 x 0.5 = 0.5
    unheld = dataclasses.replace(held, unknown=0.5)  # - 0.25
    assert judge(held, floor, "local/minilm").score == pytest.approx(0.5)
    assert judge(unheld, floor, "local/minilm").score == pytest.approx(0.25)
    assert judge(unheld, FLOORS, "local/minilm").answered  # packs: no penalty


def test_relative_drop_measures_from_the_best_score_anywhere_in_the_list() -> None:
    cands = [Candidate(i, f"f{i}.md", score=s) for i, s in enumerate([0.6, 1.0, 0.4])]
    assert [c.chunk_id for c in drop_far_below(cands, 0.5)] == [0, 1]
    assert drop_far_below(cands, -1.0) == cands


def test_a_ratio_of_zero_keeps_every_hit_even_below_zero() -> None:
    cands = [Candidate(0, "a.md", score=1.0), Candidate(1, "b.md", score=-0.5)]
    assert drop_far_below(cands, 0.0) == cands


def test_the_ratio_is_a_share_of_the_best_score() -> None:
    cands = [Candidate(i, f"f{i}.md", score=s) for i, s in enumerate([4.0, 2.0, 1.5])]
    assert [c.chunk_id for c in drop_far_below(cands, 0.5)] == [0, 1]
