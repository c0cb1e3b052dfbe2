"""One chooser of "no answer" floors: `bench calibrate` (min_answerable) and `bench skills
--match` (hub.min_match) both go through `eval.floors`."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from ep_mcp.bench.hub_match import MatchRow, choose_floor
from ep_mcp.eval import floors
from ep_mcp.eval.calibrate import QueryRow, choose_min_answerable
from ep_mcp.retrieval.confidence import ConfidenceModel, Logistic
from ep_mcp.retrieval.threshold import Evidence, Floor


def test_the_cut_keeps_all_but_the_allowed_share_halfway_between_two_scores() -> None:
    scores = [0.30 + 0.01 * i for i in range(40)]  # 5 % of 40: two may fall under
    assert floors.cut_keeping(scores) == 0.315
    assert floors.cut_keeping([0.5, 0.7]) == 0.495  # none allowed: just under the lowest
    assert sum(s < floors.cut_keeping(scores) for s in scores) == 2


def test_the_share_withheld_is_bounded_inclusive() -> None:
    assert floors.within(5, 100) and not floors.within(6, 100)
    assert floors.within(0, 0)


def test_the_most_caught_wins_and_ties_go_to_the_first() -> None:
    assert floors.most_caught([(0.1, 3), (0.2, 5), (0.3, 5)], lambda p: p[1]) == (0.2, 5)
    with pytest.raises(ValueError, match="no floor"):
        floors.most_caught([], lambda p: 0)


def _pack_rows() -> list[QueryRow]:
    def row(p: float, negative: bool) -> QueryRow:
        logit = math.log(p / (1 - p))
        return QueryRow("p", "dev", negative, ({"x": 0.0},), (not negative,), {"z": logit}, 1)

    return [row(0.3, True)] * 5 + [row(0.9, False)] * 40


def _pack_model() -> ConfidenceModel:
    hit = Logistic(("x",), (0.0,), 0.0, (0.0,), (1.0,))
    return ConfidenceModel(hit, Logistic(("z",), (1.0,), 0.0, (0.0,), (1.0,)), "*")


def _hub_rows() -> list[MatchRow]:
    def row(i: int, cosine: float, negative: bool) -> MatchRow:
        ev = Evidence(cosine, None, 0.0 if negative else 1.0, 3)
        return MatchRow(f"q{i}", "dev", negative, negative, None if negative else 1, ev)

    return [row(i, 0.3 + 0.01 * i, False) for i in range(40)] + [row(99, 0.1, True)]


@pytest.mark.parametrize(
    "choose",
    [
        lambda: choose_min_answerable(_pack_rows(), _pack_model()),
        lambda: choose_floor(_hub_rows(), Floor(0.0, 0.0, 0.0, "m"), "m"),
    ],
    ids=["ep_search min_answerable", "skill_search min_match"],
)
def test_both_floors_are_chosen_by_eval_floors(
    choose: Callable[[], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real = floors.most_caught

    def spy(points: Any, caught: Any) -> Any:
        calls.append(1)
        return real(points, caught)

    monkeypatch.setattr(floors, "most_caught", spy)
    chosen = choose()
    assert calls == [1] and chosen is not None
