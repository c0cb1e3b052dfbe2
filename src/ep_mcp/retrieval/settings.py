"""Each stage's settings, built by keyword from ``RetrievalSettings`` — here and nowhere else.

The config model is the one source of defaults; the stages' small frozen dataclasses have none
of their own, so a stage can never run on a default that disagrees with the config's.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import TypeVar, cast

from ep_mcp.config.model import RetrievalSettings
from ep_mcp.retrieval.boosts import BoostSettings
from ep_mcp.retrieval.fallback import FallbackWeights
from ep_mcp.retrieval.threshold import Floor, ThresholdSettings

T = TypeVar("T")


def threshold_settings(s: RetrievalSettings) -> ThresholdSettings:
    return ThresholdSettings(floor=activation_floor(s), score_ratio=s.score_ratio)


def activation_floor(s: RetrievalSettings) -> Floor:
    """``ep_search``'s "no answer" floor (the hub's is ``hub.match.match_floor``)."""
    return Floor(
        hybrid=s.activation_floor,
        coverage_weight=s.coverage_weight,
        lexical=s.lexical_coverage_floor,
        calibrated_for=s.activation_model,
    )


def boost_settings(s: RetrievalSettings) -> BoostSettings:
    return same_named(BoostSettings, s)


def fallback_weights(s: RetrievalSettings) -> FallbackWeights:
    return same_named(FallbackWeights, s, prefix="fallback_")


def same_named(cls: type[T], s: RetrievalSettings, prefix: str = "") -> T:
    """``cls`` with each field taken from the field of ``s`` named ``prefix`` + its own name
    (a stage's settings that are a slice of ``RetrievalSettings``, named alike). Made once
    per settings object (both are frozen), not once per query."""
    key = (cls, id(s), prefix)
    known = _SLICES.get(key)
    if known is not None and known[0] is s:
        return cast(T, known[1])
    names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    made = cls(**{name: getattr(s, prefix + name) for name in names})
    if len(_SLICES) >= MAX_SLICES:
        _SLICES.clear()
    _SLICES[key] = (s, made)  # ``s`` held: its id is not reused while remembered
    return made


_SLICES: dict[tuple[type, int, str], tuple[RetrievalSettings, object]] = {}
MAX_SLICES = 256


def today_of(s: RetrievalSettings) -> dt.date:
    """The date freshness is judged on: ``today`` when pinned, else the clock's."""
    return dt.date.fromisoformat(s.today) if s.today else dt.date.today()
