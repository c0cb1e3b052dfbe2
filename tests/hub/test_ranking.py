"""The hub's fusion is the packs' `fuse_rrf` over skill ids: 1-based ranks, weights, ties."""

from __future__ import annotations

import pytest

from ep_mcp.hub.ranking import ChunkHit, ChunkRef, best_per_skill, fuse_skills


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
