"""The hub's fusion is the packs' `fuse_rrf` over skill ids: 1-based ranks, weights, ties."""

from __future__ import annotations

import pytest

from ep_mcp.hub.ranking import ChunkHit, ChunkRef, fuse_skills


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
