"""The hub bench scores with the golden-set scorer: hit@1, hit@5, MRR, negatives, misses."""

from __future__ import annotations

from pathlib import Path

from ep_mcp.bench.hub import golden_queries, score
from ep_mcp.eval.golden import GoldenQuery
from ep_mcp.hub.results import SkillHit, SkillRow, SkillSearch


class CannedHub:
    """Answers each query with a fixed list of skill ids."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers

    def search(self, query: str, limit: int, *, smart: bool = False) -> SkillSearch:
        ids = self.answers[query][:limit]
        hits = tuple(SkillHit(SkillRow(i, "t", i, "", "SKILL.md")) for i in ids)
        return SkillSearch(query, "hybrid", hits, 1.0)


def test_score_reports_hits_mrr_negatives_and_misses() -> None:
    queries = [
        GoldenQuery("q1", "first", "keyword", ("t:a",)),
        GoldenQuery("q2", "second", "natural", ("t:b",)),
        GoldenQuery("q3", "third", "natural", ("t:c",)),
        GoldenQuery("n1", "nothing", "negative", ()),
    ]
    hub = CannedHub(
        {
            "first": ["t:a"],
            "second": ["t:x", "t:y", "t:b"],
            "third": ["t:x"],
            "nothing": ["t:x"],
        }
    )
    out = score(hub, queries)  # type: ignore[arg-type]
    assert out["all"] == {"n": 3, "hit@1": 0.333, "hit@5": 0.667, "mrr": 0.444}
    assert out["by_category"]["natural"] == {"n": 2, "hit@1": 0.0, "hit@5": 0.5, "mrr": 0.167}
    assert out["negatives"] == {"n": 1, "answered": 1}
    assert [(m["id"], m["rank"]) for m in out["misses"]] == [("q2", 3), ("q3", None)]


def test_golden_queries_name_skills_by_tap_and_directory(tmp_path: Path) -> None:
    for pack in ("anthropics-skills", "obra-superpowers"):
        (tmp_path / f"{pack}.yaml").write_text(
            f"pack: {pack}\nqueries:\n"
            "  - {id: x1, query: q, category: keyword, expected: [skills/pdf/SKILL.md]}\n"
            "  - {id: x2, query: n, category: negative, expected: []}\n",
            encoding="utf-8",
        )
    queries = golden_queries(tmp_path)
    assert queries[0].expected == ("anthropics__skills:skills/pdf",)
    assert queries[1].negative
    assert queries[2].expected == ("obra__superpowers:skills/pdf",)
