"""Each stage's settings are a slice of ``RetrievalSettings``, made once per settings object."""

from __future__ import annotations

import dataclasses

import pytest

from ep_mcp.config.model import RetrievalSettings
from ep_mcp.retrieval import settings as stage_settings
from ep_mcp.retrieval.settings import boost_settings, fallback_weights


def test_a_stages_settings_are_made_once_per_settings_object_not_per_query() -> None:
    settings = RetrievalSettings()
    assert boost_settings(settings) is boost_settings(settings)
    assert fallback_weights(settings) is fallback_weights(settings)


def test_other_settings_get_their_own_slice_with_their_own_values() -> None:
    settings = RetrievalSettings()
    changed = dataclasses.replace(settings, length_penalty=0.5, fallback_path_weight=0.9)
    assert boost_settings(changed).length_penalty == 0.5
    assert boost_settings(settings).length_penalty == settings.length_penalty
    assert fallback_weights(changed).path_weight == 0.9
    assert fallback_weights(settings).path_weight == settings.fallback_path_weight


def test_settings_equal_in_value_but_made_apart_give_equal_slices() -> None:
    first, second = RetrievalSettings(), RetrievalSettings()
    assert boost_settings(first) == boost_settings(second)


def test_each_settings_object_keeps_its_own_remembered_slice() -> None:
    one, other = RetrievalSettings(), RetrievalSettings(length_penalty=0.5)
    first = boost_settings(one)
    boost_settings(other)  # remembered beside it, not in its place
    assert boost_settings(one) is first


def test_the_remembered_slices_stay_within_their_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stage_settings, "MAX_SLICES", 3)
    monkeypatch.setattr(stage_settings, "_SLICES", {})
    kept = [RetrievalSettings(length_penalty=i / 10) for i in range(7)]  # held: ids not reused
    for s in kept:
        boost_settings(s)
        assert len(stage_settings._SLICES) <= 3
