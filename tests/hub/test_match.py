"""skill_search says "no skill matches" instead of a confident wrong skill, and shows the
closest ones only when asked (``include_low_confidence``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from ep_mcp.cli import main
from ep_mcp.config.model import PackSettings, RetrievalSettings, Settings
from ep_mcp.hub.hub import SkillHub
from ep_mcp.hub.match import NO_MATCH, no_match_note
from ep_mcp.index.embed import HashingEmbedder
from ep_mcp.library.runtime import PackRuntime
from ep_mcp.retrieval import threshold
from ep_mcp.retrieval.threshold import LEXICAL, Evidence, Floor, Verdict, judge
from ep_mcp.retrieval.types import SearchRequest
from ep_mcp.tools.registry import ToolContext, call_tool

FLOOR = Floor(hybrid=0.5, coverage_weight=0.5, lexical=0.3, calibrated_for="local/m")
OFF_TOPIC = "bake sourdough bread and roast a whole chicken"  # one word of six in a skill


def _ev(cosine: float | None, coverage: float, terms: int, unknown: float = 0.0) -> Evidence:
    return Evidence(cosine, None, coverage, terms, unknown)


@pytest.mark.parametrize(
    ("evidence", "embedder", "rule", "matched"),
    [
        (_ev(0.4, 0.2, 3), "local/m-dq", "hybrid", True),  # 0.4 + 0.5 x 0.2 = 0.5
        (_ev(0.3, 0.2, 3), "local/m-dq", "hybrid", False),
        (_ev(0.9, 0.0, 3), "other/model", "lexical", False),  # foreign cosine: unused
        (_ev(None, 0.34, 3), None, "lexical", True),
        (_ev(None, 0.25, 4), None, "lexical", False),
    ],
)
def test_the_verdict_weighs_cosine_and_coverage_only_for_the_calibrated_embedder(
    evidence: Evidence, embedder: str | None, rule: str, matched: bool
) -> None:
    verdict = judge(evidence, FLOOR, embedder)
    assert (verdict.rule, verdict.answered) == (rule, matched)


def test_the_note_names_the_setting_the_score_fell_under() -> None:
    verdict = judge(_ev(0.3, 0.2, 3), FLOOR, "local/m")
    assert no_match_note(verdict, shown=False) == f"{NO_MATCH} (match 0.40 < hub.min_match 0.5)"
    assert "shown anyway" in no_match_note(verdict, shown=True)


@pytest.fixture
def tapped(make_repo: Callable[..., Path], make_hub: Callable[..., SkillHub]) -> SkillHub:
    hub = make_hub()
    hub.tap(str(make_repo()), allow_file=True)
    return hub


def test_an_off_topic_task_gets_no_skill_and_a_note(tapped: SkillHub) -> None:
    reply = tapped.search(OFF_TOPIC, 5)
    assert reply.results == () and reply.withheld == 1
    data = reply.to_dict()
    assert data["matched"] is False and data["match"] < 0.324
    assert data["notes"][0].startswith(f"{NO_MATCH} (term coverage ")


def test_include_low_confidence_shows_the_closest_skills_anyway(tapped: SkillHub) -> None:
    reply = tapped.search(OFF_TOPIC, 5, include_low_confidence=True)
    assert len(reply.results) == 1 and reply.withheld == 0
    assert reply.to_dict()["matched"] is False
    assert "the closest skills are shown anyway" in reply.notes[0]


def test_an_on_topic_task_still_gets_its_skill(tapped: SkillHub) -> None:
    reply = tapped.search("flatten the pdf form so nobody can edit it", 5).to_dict()
    assert reply["matched"] is True and "notes" not in reply
    assert reply["results"][0]["name"] == "pdf-forms"


def test_the_floor_is_a_setting(
    make_repo: Callable[..., Path], make_hub: Callable[..., SkillHub]
) -> None:
    hub = make_hub(min_match_lexical=0.0)
    hub.tap(str(make_repo()), allow_file=True)
    assert hub.search(OFF_TOPIC, 5).results


def test_with_vectors_from_the_calibrated_embedder_the_cosine_counts(
    make_repo: Callable[..., Path], make_hub: Callable[..., SkillHub]
) -> None:
    embedder = HashingEmbedder(64)
    strict = make_hub(embedder=embedder, match_model=embedder.name, min_match=5.0)
    strict.taps.add(str(make_repo()), allow_file=True)
    strict.reindex(dense=True)
    on_topic = "flatten the pdf form so nobody can edit it"
    reply = strict.search(on_topic, 5)  # full term coverage, yet the cosine rule withholds
    assert reply.verdict is not None and reply.verdict.rule == "hybrid"
    assert reply.results == () and "hub.min_match 5.0" in reply.notes[0]
    loose = make_hub(embedder=embedder, match_model=embedder.name, min_match=-1.0)
    assert loose.search(OFF_TOPIC, 5).results  # a weak match, let by the lower floor


def test_the_tool_and_the_cli_each_say_how_to_see_the_closest(tapped: SkillHub, home: Path) -> None:
    ctx = ToolContext(library=None, hub=tapped)
    withheld = call_tool(ctx, "skill_search", {"query": OFF_TOPIC})
    assert withheld["results"] == []
    assert withheld["notes"][0].endswith("; include_low_confidence=true to see the closest anyway")
    shown = call_tool(ctx, "skill_search", {"query": OFF_TOPIC, "include_low_confidence": True})
    assert shown["results"][0]["name"] == "marinade"
    runner, env = CliRunner(), {"EP_MCP_HOME": str(home)}
    result = runner.invoke(main, ["skills", "search", OFF_TOPIC], env=env)
    assert result.exit_code == 0 and result.stdout.startswith("0 skills")
    assert "add --include-low-confidence to see the closest anyway" in result.stderr
    args = ["skills", "search", OFF_TOPIC, "--include-low-confidence", "--json"]
    result = runner.invoke(main, args, env=env)
    assert json.loads(result.stdout)["results"][0]["name"] == "marinade"


def test_terms_no_tap_holds_lower_the_match_by_the_unknown_penalty() -> None:
    floor = Floor(0.5, 0.5, 0.3, "local/m", unknown_penalty=0.5)
    known = judge(_ev(0.4, 0.5, 4), floor, "local/m")  # 0.4 + 0.25
    unknown = judge(_ev(0.4, 0.5, 4, 0.5), floor, "local/m")  # - 0.25
    assert known.answered and not unknown.answered
    assert unknown.score == pytest.approx(0.4)


def test_a_task_for_a_skill_nobody_tapped_gets_no_skill_when_its_words_are_in_no_tap(
    make_repo: Callable[..., Path], make_hub: Callable[..., SkillHub]
) -> None:
    embedder = HashingEmbedder(64)
    hub = make_hub(embedder=embedder, match_model=embedder.name, min_match=0.6)
    hub.taps.add(str(make_repo()), allow_file=True)
    hub.reindex(dense=True)
    absent = "flatten the pdf form in kotlin with gradle"  # kotlin, gradle: in no tap
    reply = hub.search(absent, 5, include_low_confidence=True)
    assert reply.evidence is not None and reply.evidence.unknown == pytest.approx(2 / 5)
    assert hub.search(absent, 5).results == ()
    assert hub.search("flatten the pdf form so nobody can edit it", 5).results


def test_ep_search_and_skill_search_are_judged_by_the_one_floor(
    tapped: SkillHub,
    make_pack: Callable[[dict[str, str]], Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Both no-answer rules are `retrieval.threshold.judge`: overrule it and both answer an
    off-topic query they withhold otherwise (a path with a floor of its own would not)."""
    pack = make_pack({"a.md": "# Inverters\n\nSizing the inverter for a battery bank.\n"})
    settings = Settings(retrieval=RetrievalSettings(today="2026-06-01"))
    rt = PackRuntime(PackSettings(path=pack, index_dir=tmp_path / "idx"), settings, None, tmp_path)
    rt.index(show_progress=False)
    off_pack = "bake sourdough bread and roast a chicken on the battery"  # one word of six
    try:
        assert rt.search(SearchRequest(off_pack, k=5)).hits == ()
        assert tapped.search(OFF_TOPIC, 5).results == ()
        judged: list[str] = []

        def lenient(ev: Evidence, floor: Floor, model: str | None) -> Verdict:
            judged.append(f"{floor.lexical}")
            return Verdict(1.0, 0.0, LEXICAL)

        monkeypatch.setattr(threshold, "judge", lenient)
        assert rt.search(SearchRequest(off_pack, k=5)).hits
        assert tapped.search(OFF_TOPIC, 5).results
        assert judged == [
            "0.25",
            "0.324",
        ]  # retrieval.lexical_coverage_floor, hub.min_match_lexical
    finally:
        rt.close()
