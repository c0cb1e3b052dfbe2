"""Evaluation reports: built from outcomes, saved and pruned, compared, drawn as SVG."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ep_mcp.errors import ConfigError
from ep_mcp.eval import svg
from ep_mcp.eval.golden import GoldenQuery, GoldenSet, run_set
from ep_mcp.eval.report import (
    KEPT,
    build_report,
    diff,
    history,
    load_report,
    never_in_top,
    save_report,
)
from ep_mcp.eval.report_html import render_document

QUERIES = (
    GoldenQuery("q1", "solar", "keyword", ("solar.md",)),
    GoldenQuery("q2", "wind", "natural", ("wind.md",)),
    GoldenQuery("q3", "cake", "negative", ()),
)


def report_of(answers: dict[str, list[str]], created: str) -> dict[str, Any]:
    rep = run_set(GoldenSet("demo", QUERIES), lambda q: answers[q])
    return build_report([rep], k=10, created=created)


BEFORE = report_of({"solar": ["wind.md", "solar.md"], "wind": ["wind.md"], "cake": []}, "t1")
AFTER = report_of({"solar": ["solar.md"], "wind": ["solar.md"], "cake": []}, "t2")


def test_a_report_keeps_every_query_with_its_ranked_files() -> None:
    pack = AFTER["packs"][0]
    assert [q["id"] for q in pack["queries"]] == ["q1", "q2", "q3"]
    assert pack["queries"][1]["ranked"] == ["solar.md"] and pack["queries"][1]["rank"] is None
    assert pack["overall"]["recall@1"] == 0.5


def test_diff_names_fixed_and_broken_queries_and_metric_changes() -> None:
    (change,) = diff(BEFORE, AFTER)
    assert change["metrics"]["recall@1"] == (0.5, 0.5)
    status = {q["id"]: q["status"] for q in change["queries"]}
    assert status == {"q1": "fixed", "q2": "broken"}


def test_never_in_top_lists_files_no_query_reached() -> None:
    files = ["solar.md", "wind.md", "tides.md"]
    assert never_in_top(AFTER, "demo", files) == ["tides.md", "wind.md"]
    assert never_in_top(AFTER, "other", files) == []


def test_history_is_newest_first_and_pruned(tmp_path: Path) -> None:
    for i in range(KEPT + 3):
        save_report({**AFTER, "created": f"2026-01-01T00:00:{i:02d}Z"}, tmp_path)
    saved = history(tmp_path)
    assert len(saved) == KEPT
    assert load_report(saved[0])["created"] == f"2026-01-01T00:00:{KEPT + 2:02d}Z"


@pytest.mark.parametrize("text", ["not json", "[]", '{"format": "other"}', '{"format": '
                                  '"ep-mcp-eval/1", "packs": [1]}'])  # fmt: skip
def test_a_file_that_is_not_a_report_is_a_clear_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "r.json"
    path.write_text(text)
    with pytest.raises(ConfigError, match="report"):
        load_report(path)


def test_the_html_report_is_self_contained_and_escapes_everything() -> None:
    hostile = json.loads(json.dumps(AFTER).replace('"solar"', '"<script>alert(1)</script>"'))
    page = render_document(hostile, BEFORE)
    assert "<script" not in page and "&lt;script&gt;" in page
    assert "<link" not in page and "src=" not in page
    assert page.count("<svg") >= 3  # per pack, per category, before → after


def test_svg_labels_are_escaped_and_values_clamped() -> None:
    drawn = svg.grouped_bars("t", [("<b>", {"mrr": 7.0})], ["mrr"])
    assert "&lt;b&gt;" in drawn and "<b>" not in drawn and ">1.00<" in drawn
    assert drawn.startswith('<svg xmlns="http://www.w3.org/2000/svg"')
    assert 'style="' not in drawn + svg.delta_bars("d", [("x", 0.2, 0.5)])
    assert "<rect" in svg.histogram("h", [("a", 0), ("b", 3)])
