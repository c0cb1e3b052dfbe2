"""The no-match floor is chosen on dev rows alone and reported as an operating point."""

from __future__ import annotations

from ep_mcp.bench.hub_match import MatchRow, choose_floor, operating_point
from ep_mcp.eval.floors import MAX_WITHHELD
from ep_mcp.retrieval.threshold import Evidence, Floor

BASE = Floor(hybrid=0.0, coverage_weight=0.0, lexical=0.0, calibrated_for="m")


def _ev(cosine: float | None, coverage: float, terms: int, unknown: float = 0.0) -> Evidence:
    return Evidence(cosine, None, coverage, terms, unknown)


def _row(i: int, cosine: float, coverage: float, negative: bool = False) -> MatchRow:
    rank = None if negative else 1
    return MatchRow(f"q{i}", "dev", negative, negative, rank, _ev(cosine, coverage, 3))


def test_the_floor_withholds_at_most_its_share_of_answerable_dev_queries() -> None:
    answerable = [_row(i, 0.30 + 0.01 * i, 1.0) for i in range(40)]  # cosines 0.30 .. 0.69
    negatives = [_row(100 + i, 0.2 + 0.05 * i, 0.0, negative=True) for i in range(8)]
    point = choose_floor([*answerable, *negatives], BASE, "m")
    assert point.withheld == int(MAX_WITHHELD * 40) == 2
    # halfway between the second and third answerable scores, 0.31 + w and 0.32 + w; the
    # negatives (coverage 0, cosine up to 0.55) are all under it from w = 0.3: the smallest
    # weight that catches the most wins
    assert (point.floor.coverage_weight, point.caught) == (0.3, 8)
    assert point.floor.hybrid == 0.615


def test_an_operating_point_counts_withheld_answers_as_misses() -> None:
    rows = [_row(1, 0.9, 1.0), _row(2, 0.1, 0.0), _row(3, 0.1, 0.0, negative=True)]
    point = operating_point(rows, Floor(0.5, 0.0, 0.0, "m"), "m")
    assert (point.withheld, point.caught, point.hit_at_1) == (1, 1, 0.5)
    assert point.to_dict()["answerable_withheld"] == "1/2"


def test_without_vectors_the_lexical_floor_is_chosen() -> None:
    rows = [_row(i, 0.0, 0.1 * i) for i in range(1, 11)]
    rows = [
        MatchRow(
            r.id,
            r.split,
            r.negative,
            r.borrowed,
            r.rank,
            _ev(None, r.evidence.coverage, 3),
        )
        for r in rows
    ]
    point = choose_floor(rows, BASE, None)
    assert point.rule == "lexical" and point.floor.lexical == 0.095


def test_tasks_for_absent_skills_are_counted_apart_and_the_unknown_penalty_moves_them() -> None:
    answerable = _row(1, 0.5, 1.0)
    absent = MatchRow("abs-1", "test", True, False, None, _ev(0.5, 1.0, 4, 0.5), True)
    floor = Floor(0.8, 0.5, 0.0, "m", unknown_penalty=0.5)  # 1.0 kept, 1.0 - 0.25 not
    point = operating_point([answerable, absent], floor, "m")
    assert (point.absent, point.absent_matched, point.negatives, point.withheld) == (1, 0, 0, 0)
    assert point.to_dict()["absent_skills_matched"] == "0/1"
    before = operating_point([answerable, absent], Floor(0.8, 0.5, 0.0, "m"), "m")
    assert before.to_dict()["absent_skills_matched"] == "1/1"
