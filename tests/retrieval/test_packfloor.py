"""A pack's own "not covered" floor: the probes it is fitted on and the rule that places it."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ep_mcp.packs.models import Document
from ep_mcp.retrieval.packfloor import (
    PackFloor,
    PackFloorSettings,
    fit_floor,
    floor_from_json,
    model_signature,
    probes,
)

SETTINGS = PackFloorSettings(quantile=0.1, cap=0.7, probes=80)


def doc(path: str, title: str, body: str, **extra: Any) -> Document:
    fields: dict[str, Any] = {
        "path": path,
        "text": body,
        "body_line": 1,
        "meta": {},
        "title": title,
        "type": "",
        "tags": (),
        "id": None,
        "content_hash": "sha256:0",
        "file_hash": "0",
        "navigation": False,
        "always": False,
        "on_demand": False,
        "requires": (),
        "related": (),
        "verified_at": None,
        "refresh": None,
        "expires_at": None,
        "sidecar": None,
    }
    fields.update(extra)
    return Document(**fields)


def test_probes_are_titles_headings_and_frontmatter_questions_of_the_pack() -> None:
    body = (
        "# Charging lithium batteries\n\nText.\n\n## Cold weather charging limits\n\n"
        "```bash\n# not a heading: a comment in a code block\n```\n\n## Overview\n"
    )
    docs = [
        doc(
            "a.md", "Charging lithium batteries", body, meta={"questions": ["Can I charge at 0 C?"]}
        ),
        doc(
            "_index.md", "Index of everything here", "# Index of everything here\n", navigation=True
        ),
    ]
    found = set(probes(docs, 80))
    assert found == {
        "Charging lithium batteries",
        "Cold weather charging limits",
        "Can I charge at 0 C?",
    }


def test_probes_are_a_stable_choice_of_at_most_the_limit() -> None:
    docs = [doc(f"f{i}.md", f"Topic number {i} explained", "") for i in range(50)]
    chosen = probes(docs, 10)
    assert len(chosen) == 10
    assert chosen == probes(list(reversed(docs)), 10)  # by a hash of the text, not file order


def test_the_floor_is_the_probes_quantile_within_the_global_floor_and_the_cap() -> None:
    answered = [i / 100 for i in range(40, 100)]  # 0.40 .. 0.99
    assert fit_floor(answered, 0.32, SETTINGS) == pytest.approx(0.459, abs=1e-3)
    assert fit_floor([0.1] * 20, 0.32, SETTINGS) == 0.32  # never under the global floor
    assert fit_floor([0.99] * 20, 0.32, SETTINGS) == 0.7  # never over the cap


def test_too_few_probes_leave_the_global_floor() -> None:
    assert fit_floor([0.9] * 9, 0.32, SETTINGS) == 0.32


@given(st.lists(st.floats(0, 1), min_size=10, max_size=60), st.floats(0, 0.5))
def test_the_floor_is_always_between_the_global_floor_and_the_cap(
    answered: list[float], global_floor: float
) -> None:
    floor = fit_floor(answered, global_floor, SETTINGS)
    assert global_floor - 1e-4 <= floor <= max(SETTINGS.cap, global_floor) + 1e-4


def test_a_stored_floor_reads_back_and_a_damaged_one_reads_as_none() -> None:
    fitted = PackFloor(0.55, "abc", "3", SETTINGS.rule(0.32), 80, 8, 60, 60)
    assert floor_from_json(fitted.to_json()) == fitted
    for raw in (None, "", "{", '{"floor": "x"}', "[]", '{"floor": 0.5}'):
        assert floor_from_json(raw) is None


def test_the_model_signature_changes_with_any_weight() -> None:
    a = {"answerable": {"weights": [1.0, 2.0]}}
    b = {"answerable": {"weights": [1.0, 2.5]}}
    assert model_signature(a) == model_signature(dict(a)) != model_signature(b)
