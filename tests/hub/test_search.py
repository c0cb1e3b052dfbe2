"""skill_search: one result per skill, stable identities, mirrors collapsed, rankers named."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ep_mcp.errors import QueryError
from ep_mcp.hub import tapindex
from ep_mcp.hub.errors import SkillNotFoundError
from ep_mcp.hub.hub import SkillHub

from .helpers import SMALL_REPO, skill_md


@pytest.fixture
def two_taps(make_repo: Callable[..., Path], make_hub: Callable[..., SkillHub]) -> SkillHub:
    """acme/skills and beta/skills; beta mirrors pdf-forms byte for byte and has its own
    different `marinade`."""
    make_repo()
    make_repo(
        {
            "pdf-forms/SKILL.md": SMALL_REPO["skills/pdf-forms/SKILL.md"],
            "marinade/SKILL.md": skill_md("marinade", "Use when pickling vegetables in brine."),
        },
        owner="beta",
    )
    hub = make_hub()
    for owner in ("acme", "beta"):
        hub.taps.add(str(Path(hub.home).parent / "src" / owner / "skills"), allow_file=True)
    hub.reindex().to_dict()
    return hub


def test_each_skill_appears_once_with_its_best_section_as_the_snippet(two_taps: SkillHub) -> None:
    reply = two_taps.search("flatten the pdf form so nobody can edit it", 10)
    assert reply.ranker == "lexical"
    ids = [r.skill.id for r in reply.results]
    assert len(ids) == len(set(ids))
    top, match = reply.results[0].skill, reply.results[0].match
    assert match is not None
    assert top.id == "acme__skills:skills/pdf-forms"
    assert top.name == "pdf-forms" and top.tap == "acme__skills"
    assert match.heading_path[0] == "pdf-forms"
    assert match.source_file == "skills/pdf-forms/SKILL.md"
    lines = Path(two_taps.home, "taps/acme__skills", match.source_file).read_text().splitlines()
    first, last = match.line_range
    assert "Flatten the form" in "\n".join(lines[first - 1 : last])


def test_mirrored_copies_collapse_into_the_best_ranked_one(two_taps: SkillHub) -> None:
    results = two_taps.search("pdf forms", 10).to_dict()["results"]
    pdf = [r for r in results if r["name"] == "pdf-forms"]
    assert len(pdf) == 1
    assert pdf[0]["mirrors"] in (["beta__skills:pdf-forms"], ["acme__skills:skills/pdf-forms"])


def test_same_named_skills_stay_apart_and_a_bare_name_asks_for_the_tap(two_taps: SkillHub) -> None:
    results = two_taps.search("marinade", 10).to_dict()["results"]
    assert {r["id"] for r in results if r["name"] == "marinade"} == {
        "acme__skills:skills/marinade",
        "beta__skills:marinade",
    }
    with pytest.raises(SkillNotFoundError, match="tap:name"):
        two_taps.info("marinade")
    assert "brine" in two_taps.info("beta__skills:marinade").skill.description
    assert two_taps.read("acme__skills:marinade").skill.name == "marinade"
    with pytest.raises(SkillNotFoundError, match="did you mean"):
        two_taps.info("marinad")


def test_the_shortlist_is_at_least_sixty_or_four_times_the_limit(
    two_taps: SkillHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[int] = []
    original = tapindex.TapIndex.lexical

    def spy(self: tapindex.TapIndex, terms: Any, n: int, *rest: Any) -> Any:
        seen.append(n)
        return original(self, terms, n, *rest)

    monkeypatch.setattr(tapindex.TapIndex, "lexical", spy)
    two_taps.search("pdf", 5)
    two_taps.search("pdf", 50)
    assert seen == [60, 60, 200, 200]  # two taps: each brings the whole shortlist
    from ep_mcp.hub.search import per_tap_pool

    assert per_tap_pool(60, 20) == 20 and 20 * per_tap_pool(60, 20) >= 60
    assert per_tap_pool(200, 20) == 20 and per_tap_pool(60, 1) == 60


def test_without_any_index_a_frontmatter_search_still_answers(
    make_repo: Callable[..., Path], make_hub: Callable[..., SkillHub]
) -> None:
    hub = make_hub()
    hub.taps.add(str(make_repo()), allow_file=True)
    reply = hub.search("kubernetes ingress", 5).to_dict()
    assert reply["ranker"] == "frontmatter"
    assert reply["results"][0]["id"] == "acme__skills:skills/kubernetes-ingress"
    assert any("reindex" in n for n in reply["notes"])
    assert [s.name for s in hub.list_skills().skills] == [
        "kubernetes-ingress",
        "marinade",
        "pdf-forms",
    ]


def test_no_taps_and_empty_queries_are_answered_clearly(make_hub: Callable[..., SkillHub]) -> None:
    hub = make_hub()
    reply = hub.search("anything", 5).to_dict()
    assert reply["results"] == [] and "ep-mcp tap" in reply["notes"][0]
    with pytest.raises(QueryError):
        hub.search("   ", 5).to_dict()


def test_a_long_skill_is_read_in_bounded_parts_and_the_cut_is_announced(
    make_repo: Callable[..., Path], make_hub: Callable[..., SkillHub]
) -> None:
    body = "\n".join(f"line {i} of a long instruction" for i in range(400))
    make_repo({"long/SKILL.md": skill_md("long", "A long skill.", body)})
    hub = make_hub(read_max_chars=1000)
    hub.tap(str(Path(hub.home).parent / "src" / "acme" / "skills"), allow_file=True).to_dict()
    first = hub.read("long").to_dict()
    assert first["truncated"] and len(first["text"]) <= 1000 and first["text"].endswith("\n")
    assert "offset=" in first["note"] and first["total_chars"] > 1000
    parts = [first["text"]]
    offset = first["offset"] + len(first["text"])
    while True:
        part = hub.read("acme__skills:long", offset=offset).to_dict()
        parts.append(part["text"])
        offset += len(part["text"])
        if not part["truncated"]:
            break
    full = Path(hub.home, "taps/acme__skills/long/SKILL.md").read_text()
    assert "".join(parts) == full
