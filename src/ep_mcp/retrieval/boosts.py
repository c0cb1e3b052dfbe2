"""Metadata stage: type/tags filters, hint boosts, the always tier, length and freshness
penalties."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ep_mcp.retrieval.candidates import Candidate, by_score


@dataclass(frozen=True)
class BoostSettings:
    """The boost stage's part of ``RetrievalSettings`` (built by ``retrieval.settings``)."""

    type_match_boost: float
    tag_match_boost: float
    always_tier_boost: float
    length_penalty_chars: int
    length_penalty: float
    freshness_penalty: float


def apply_filters(
    candidates: Sequence[Candidate], type_: str | None, tags: Sequence[str]
) -> list[Candidate]:
    """Keep only candidates of ``type_`` (when given) carrying any of ``tags`` (when given)."""
    wanted = set(tags)
    return [
        c
        for c in candidates
        if (not type_ or c.type == type_) and (not wanted or wanted & set(c.tags))
    ]


def apply_boosts(
    candidates: Sequence[Candidate],
    settings: BoostSettings,
    *,
    type_hint: str | None = None,
    tag_hints: Sequence[str] = (),
    scale: float = 1.0,
) -> list[Candidate]:
    """Additive boosts (x ``scale``, the score range of the fusion used) and multiplicative
    penalties; re-sorted best first. A boost never rescues what the threshold dropped."""
    hints = set(tag_hints)
    out: list[Candidate] = []
    for c in candidates:
        score, why = c.score, []
        if type_hint and c.type == type_hint and settings.type_match_boost:
            score += settings.type_match_boost * scale
            why.append(f"type hint +{settings.type_match_boost}")
        shared = len(hints & set(c.tags))
        if shared and settings.tag_match_boost:
            score += settings.tag_match_boost * shared * scale
            why.append(f"{shared} tag hint(s) +{settings.tag_match_boost * shared:g}")
        if c.always and settings.always_tier_boost:
            score += settings.always_tier_boost * scale
            why.append(f"always tier +{settings.always_tier_boost}")
        if c.chars < settings.length_penalty_chars and settings.length_penalty:
            score *= 1.0 - settings.length_penalty
            why.append(f"short chunk ({c.chars} chars) x{1 - settings.length_penalty:g}")
        if c.age_stale and settings.freshness_penalty:
            score *= 1.0 - settings.freshness_penalty
            why.append(f"past its refresh date x{1 - settings.freshness_penalty:g}")
        out.append(c.moved(score, "boosts: " + ", ".join(why)) if why else c)
    return by_score(out)
