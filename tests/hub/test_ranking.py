"""The hub's fusion is the packs' `fuse_rrf` over skill ids: 1-based ranks, weights, ties."""

from __future__ import annotations

import pytest

from ep_mcp.hub.ranking import (
    ChunkHit,
    ChunkRef,
    SkillCandidate,
    apply_order,
    best_per_skill,
    collapse_mirrors,
    fuse_skills,
)


def _hit(skill: str, chunk: int, score: float) -> ChunkHit:
    return ChunkHit(skill, ChunkRef("tap", chunk, f"{skill}/SKILL.md"), score)


def test_fuse_skills_scores_each_skill_by_its_best_chunk_rank_in_each_leg() -> None:
    legs = {
        "lexical": [_hit("a", 1, 9.0), _hit("b", 2, 8.0), _hit("a", 3, 7.0)],
        "vector": [_hit("b", 4, 0.9), _hit("c", 5, 0.5)],
    }
    fused = fuse_skills(legs, k=60, weights={"lexical": 1.0, "vector": 2.0})
    assert [c.skill_id for c in fused] == ["b", "c", "a"]
    assert fused[0].score == pytest.approx(1 / 62 + 2 / 61)
    assert fused[1].score == pytest.approx(2 / 62)
    assert fused[2].score == pytest.approx(1 / 61)
    assert fused[0].legs == {"lexical": 2, "vector": 1}
    assert fused[2].chunk.id == 1  # the snippet: the first leg's best chunk


def test_fuse_skills_breaks_ties_in_first_seen_order() -> None:
    legs = {"lexical": [_hit("x", 1, 1.0)], "vector": [_hit("y", 2, 1.0)]}
    assert [c.skill_id for c in fuse_skills(legs)] == ["x", "y"]


@pytest.mark.parametrize("k", [1, 5, 60])
def test_fuse_skills_uses_the_rrf_k_it_is_given(k: int) -> None:
    legs = {"lexical": [_hit("a", 1, 2.0), _hit("b", 2, 1.0)]}
    fused = fuse_skills(legs, k=k)
    assert [c.score for c in fused] == pytest.approx([1 / (k + 1), 1 / (k + 2)])
    assert fuse_skills(legs)[0].score == pytest.approx(1 / 61)  # the default k is 60


def test_the_snippet_is_the_first_chunk_that_passes_else_the_best_chunk() -> None:
    card = ChunkRef("tap", 1, "a/SKILL.md#card")
    section = ChunkRef("tap", 2, "a/SKILL.md")
    legs = {
        "lexical": [ChunkHit("a", card, 9.0), ChunkHit("a", section, 5.0)],
        "vector": [ChunkHit("b", ChunkRef("tap", 3, "b/SKILL.md#card"), 0.9)],
    }
    fused = fuse_skills(legs, snippet_from=lambda ref: not ref.path.endswith("#card"))
    chunks = {c.skill_id: c.chunk for c in fused}
    assert chunks["a"] == section  # the card scored higher but is not a real section
    assert chunks["b"].id == 3  # no section at all: the best chunk of its first leg


def test_best_per_skill_keeps_the_first_of_equal_scores() -> None:
    rows = best_per_skill([_hit("a", 1, 1.0), _hit("a", 2, 1.0), _hit("b", 3, 2.0)])
    assert [(h.skill_id, h.chunk.id) for h in rows] == [("b", 3), ("a", 1)]


def _cand(skill: str, score: float = 1.0) -> SkillCandidate:
    return SkillCandidate(skill, score, ChunkRef("tap", 1, f"{skill}/SKILL.md"), {"lexical": 1})


def test_mirrors_collapse_into_the_best_ranked_copy() -> None:
    ranked = [_cand("a"), _cand("b"), _cand("a-fork"), _cand("c"), _cand("a-copy")]
    digests = {"a": "h1", "b": "h2", "a-fork": "h1", "c": None, "a-copy": "h1"}
    kept, mirrors = collapse_mirrors(ranked, digests.get)
    assert [c.skill_id for c in kept] == ["a", "b", "c"]
    assert mirrors == {"a": ["a-fork", "a-copy"]}


def test_skills_without_a_content_hash_are_never_mirrors() -> None:
    ranked = [_cand("x"), _cand("y")]
    kept, mirrors = collapse_mirrors(ranked, lambda skill: None)
    assert kept == ranked and mirrors == {}


def test_an_llm_order_comes_first_and_the_rest_keep_their_retrieval_order() -> None:
    ranked = [_cand("a"), _cand("b"), _cand("c"), _cand("d")]
    out = apply_order(ranked, ["c", "unknown", "a", "c"])
    assert [c.skill_id for c in out] == ["c", "a", "b", "d"]
    assert apply_order(ranked, []) == ranked


def test_the_snippet_prefers_a_passing_chunk_of_an_earlier_leg() -> None:
    a_card = ChunkRef("tap", 1, "a/SKILL.md#card")
    a_vec = ChunkRef("tap", 2, "a/SKILL.md")
    a_lex = ChunkRef("tap", 3, "a/SKILL.md")
    legs = {
        "lexical": [ChunkHit("a", a_card, 9.0), ChunkHit("a", a_lex, 1.0)],
        "vector": [ChunkHit("a", a_vec, 0.9)],
    }
    (fused,) = fuse_skills(legs, snippet_from=lambda ref: not ref.path.endswith("#card"))
    assert fused.chunk == a_lex  # the lexical leg's section, though the vector's scored higher
    (plain,) = fuse_skills(legs)
    assert plain.chunk == a_card  # every chunk passes: the first leg's best


def test_a_skill_found_only_by_a_later_leg_takes_that_legs_best_chunk_as_fallback() -> None:
    b_card = ChunkRef("tap", 4, "b/SKILL.md#card")
    b_worse = ChunkRef("tap", 5, "b/SKILL.md#card")
    legs = {
        "lexical": [_hit("a", 1, 1.0)],
        "vector": [ChunkHit("b", b_worse, 0.2), ChunkHit("b", b_card, 0.9)],
    }
    fused = fuse_skills(legs, snippet_from=lambda ref: not ref.path.endswith("#card"))
    assert {c.skill_id: c.chunk for c in fused}["b"] == b_card
    assert {c.skill_id: dict(c.legs) for c in fused} == {"a": {"lexical": 1}, "b": {"vector": 1}}


def test_best_per_skill_orders_skills_by_their_best_chunk() -> None:
    rows = best_per_skill([_hit("a", 1, 1.0), _hit("b", 2, 0.5), _hit("b", 3, 3.0)])
    assert [(h.skill_id, h.chunk.id, h.score) for h in rows] == [("b", 3, 3.0), ("a", 1, 1.0)]
