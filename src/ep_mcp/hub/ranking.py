"""Pure ranking stages of the hub: chunks → one candidate per skill → fused → mirrors collapsed.

No I/O here: the hub hands in (skill id, chunk, score) rows from each tap's legs and gets ranked
skill ids back. A skill's score in a leg is its best chunk's score; the chunk that wins is kept
as the result's snippet (the lexical leg's, which names the words that matched, when it has one).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ep_mcp.retrieval.fusion import fuse_rrf


@dataclass(frozen=True)
class ChunkRef:
    """Where a chunk lives: enough to rank by; the full row is read only for the winners."""

    tap: str
    id: int  # chunk id in that tap's store
    path: str  # tap-relative file path (a card's ends in "#card")


@dataclass(frozen=True)
class ChunkHit:
    skill_id: str
    chunk: ChunkRef
    score: float


@dataclass(frozen=True)
class SkillCandidate:
    skill_id: str
    score: float
    chunk: ChunkRef  # the best chunk: the snippet
    legs: Mapping[str, int]  # leg → 1-based rank of the skill in that leg


def best_per_skill(hits: Sequence[ChunkHit]) -> list[ChunkHit]:
    """One row per skill (its best chunk), best first; ties keep first-seen order."""
    best: dict[str, ChunkHit] = {}
    for hit in hits:
        kept = best.get(hit.skill_id)
        if kept is None or hit.score > kept.score:
            best[hit.skill_id] = hit
    order = {sid: i for i, sid in enumerate(best)}
    return sorted(best.values(), key=lambda h: (-h.score, order[h.skill_id]))


def fuse_skills(
    legs: Mapping[str, Sequence[ChunkHit]],
    *,
    k: int = 60,
    weights: Mapping[str, float] | None = None,
    snippet_from: Callable[[ChunkRef], bool] = lambda ref: True,
) -> list[SkillCandidate]:
    """Reciprocal rank fusion over per-skill rankings.

    The snippet is the best chunk of the first leg (in ``legs`` order) whose chunk passes
    ``snippet_from`` (e.g. "is a real section, not the card"), else of the first leg at all.
    """
    per_leg = {leg: best_per_skill(hits) for leg, hits in legs.items()}
    fused = fuse_rrf(
        {leg: [(h.skill_id, h.score) for h in rows] for leg, rows in per_leg.items()},
        k=k,
        weights=weights,
    )
    chunks: dict[str, ChunkRef] = {}
    fallback: dict[str, ChunkRef] = {}
    ranks: dict[str, dict[str, int]] = {}
    for leg, rows in per_leg.items():
        for rank, hit in enumerate(rows, start=1):
            fallback.setdefault(hit.skill_id, hit.chunk)
            ranks.setdefault(hit.skill_id, {})[leg] = rank
        for hit in legs[leg]:
            if snippet_from(hit.chunk):
                chunks.setdefault(hit.skill_id, hit.chunk)
    return [SkillCandidate(s, score, chunks.get(s, fallback[s]), ranks[s]) for s, score in fused]


def collapse_mirrors(
    ranked: Sequence[SkillCandidate], content_hash: Callable[[str], str | None]
) -> tuple[list[SkillCandidate], dict[str, list[str]]]:
    """Keep the best-ranked copy of each SKILL.md content; returns (kept, kept id → mirror ids)."""
    seen: dict[str, str] = {}
    kept: list[SkillCandidate] = []
    mirrors: dict[str, list[str]] = {}
    for cand in ranked:
        digest = content_hash(cand.skill_id)
        if digest is not None and digest in seen:
            mirrors.setdefault(seen[digest], []).append(cand.skill_id)
            continue
        if digest is not None:
            seen[digest] = cand.skill_id
        kept.append(cand)
    return kept, mirrors


def apply_order(ranked: Sequence[SkillCandidate], order: Sequence[str]) -> list[SkillCandidate]:
    """Reorder by a list of ids (an LLM's answer); ids it left out follow in retrieval order."""
    by_id = {c.skill_id: c for c in ranked}
    first = [by_id[i] for i in dict.fromkeys(order) if i in by_id]
    chosen = {c.skill_id for c in first}
    return first + [c for c in ranked if c.skill_id not in chosen]
