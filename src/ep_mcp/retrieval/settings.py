"""Each stage's settings, built by keyword from ``RetrievalSettings`` — here and nowhere else.

The config model is the one source of defaults; the stages' small frozen dataclasses have none
of their own, so a stage can never run on a default that disagrees with the config's.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

from ep_mcp.config import RetrievalSettings
from ep_mcp.retrieval.boosts import BoostSettings
from ep_mcp.retrieval.fallback import FallbackWeights
from ep_mcp.retrieval.threshold import Floor, ThresholdSettings


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
    """Every field of ``BoostSettings`` is the same-named field of ``s``."""
    return BoostSettings(**{f.name: getattr(s, f.name) for f in dataclasses.fields(BoostSettings)})


def fallback_weights(s: RetrievalSettings) -> FallbackWeights:
    return FallbackWeights(
        coverage=s.fallback_coverage_weight,
        density=s.fallback_density_weight,
        path=s.fallback_path_weight,
        length=s.fallback_length_weight,
        length_chars=s.fallback_length_chars,
    )


def today_of(s: RetrievalSettings) -> dt.date:
    """The date freshness is judged on: ``today`` when pinned, else the clock's."""
    return dt.date.fromisoformat(s.today) if s.today else dt.date.today()
