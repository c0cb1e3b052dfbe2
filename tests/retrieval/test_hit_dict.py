"""A hit's dict (what every front door sends) is what ``dataclasses.asdict`` made of it, and
shares nothing mutable with the hit."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from ep_mcp.retrieval.types import Hit


def asdict_reference(hit: Hit) -> dict[str, Any]:
    """``Hit.to_dict`` as it was written on ``dataclasses.asdict``."""
    data = dataclasses.asdict(hit)
    extra = data.pop("extra")
    data["tags"] = list(hit.tags)
    data["heading_path"] = list(hit.heading_path)
    data["line_range"] = list(hit.line_range)
    if hit.confidence is None:
        data.pop("confidence")
    data.update(extra)
    return data


def a_hit(**changes: Any) -> Hit:
    hit = Hit(
        id="kilns",
        source_file="kilns.md",
        title="Kilns",
        type="guide",
        tags=("firing", "stoneware"),
        heading_path=("Kilns", "Cone six"),
        text="Fire stoneware slowly to cone six.",
        score=0.812345,
        content_hash="abc",
        verified_at=None,
        chunk_index=2,
        line_range=(3, 9),
    )
    return dataclasses.replace(hit, **changes)


@pytest.mark.parametrize(
    "hit",
    [
        a_hit(),
        a_hit(confidence=0.73, verified_at="2026-01-02", graph_expanded=True),
        a_hit(extra={"stale": False, "age_days": 12, "refresh_due": None}),
        a_hit(
            requires_expanded=True,
            extra={
                "original_markdown": "# Kilns",
                "byte_range": [10, 99],
                "provenance": {"ident": "kilns", "heading_path": ["Kilns"]},
                "stale_note": "live file unavailable: gone",
            },
        ),
    ],
)
def test_a_hits_dict_is_what_asdict_made_of_it_in_the_same_order(hit: Hit) -> None:
    got = hit.to_dict()
    assert got == asdict_reference(hit)
    assert json.dumps(got) == json.dumps(asdict_reference(hit))  # key order too


def test_changing_a_hits_dict_leaves_the_hit_as_it_was() -> None:
    hit = a_hit(extra={"byte_range": [10, 99], "provenance": {"heading_path": ["Kilns"]}})
    got = hit.to_dict()
    got["byte_range"].append(100)
    got["provenance"]["heading_path"].append("Cone six")
    got["tags"].append("glaze")
    assert hit.extra == {"byte_range": [10, 99], "provenance": {"heading_path": ["Kilns"]}}
    assert hit.tags == ("firing", "stoneware")
