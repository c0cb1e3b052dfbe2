"""Choosing a "no answer" floor on the dev split — for ``ep_search`` and ``skill_search`` alike.

A floor is chosen where it catches the most negatives (queries nothing answers) while
withholding at most ``MAX_WITHHELD`` of the answerable ones; ties go to the first floor tried
(the lowest). ``eval.calibrate`` chooses ``retrieval.min_answerable`` over a grid of
probabilities; ``bench.hub_match`` chooses ``hub.min_match`` (per coverage weight) with
``cut_keeping``, halfway between two answerable scores. Pure: scores and points in, a choice out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

MAX_WITHHELD = 0.05  # share of the answerable dev queries a floor may withhold

P = TypeVar("P")


def within(withheld: int, answerable: int, max_withheld: float = MAX_WITHHELD) -> bool:
    """Does a floor withholding ``withheld`` of ``answerable`` queries keep to the share?"""
    return withheld / max(answerable, 1) <= max_withheld


def cut_keeping(scores: Sequence[float], max_withheld: float = MAX_WITHHELD) -> float:
    """The highest floor under which at most ``max_withheld`` of ``scores`` (the answerable
    queries' scores) fall, halfway between the last one kept and the one under it — not on a
    dev query's score — rounded to 3 places."""
    ordered = sorted(scores)
    allowed = int(max_withheld * len(ordered))
    cut = (ordered[allowed] + ordered[allowed - 1]) / 2 if allowed else ordered[0] - 0.005
    return round(cut, 3)


def most_caught(points: Iterable[P], caught: Callable[[P], int]) -> P:
    """The point catching the most negatives; ties: the first (points come lowest floor first)."""
    best: P | None = None
    for point in points:
        if best is None or caught(point) > caught(best):
            best = point
    if best is None:
        raise ValueError("no floor to choose from")
    return best
