"""One ranking from several packs' answers to the same query (a merged search).

Each pack's pipeline scores on its own scale (min-max-normalised legs, boosts), so raw scores
do not compare across packs. What does compare is the pack's *activation* — best cosine plus
a share of lexical term coverage, the signal the threshold stage uses to decide whether the
pack answers at all — since every pack of a server embeds with the same model. The merge:

1. a pack that answered empty (its threshold said "not covered") contributes nothing;
2. each other pack's hits keep their pack's scores relative to its best hit (1.0 at the top,
   the shape of the pack's ranking kept), times the pack's activation:
   ``activation(p) x score / best score(p)`` — so the pack that answers best leads, and a
   pack that answers almost as well interleaves its strong hits instead of being shut out;
3. the best ``k`` win; ``requires:`` hits a pack appended after its slice follow, for the
   packs that placed a hit.

Picked on the golden sets' dev split among raw scores, rank fusion over packs with and
without the activation as weight, and activation-scaled scores (docs/BENCHMARKS.md): this
one tied best on hit@5 and has no constant to tune.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ep_mcp.retrieval.types import Hit, SearchResult

ScoreRule = Callable[[SearchResult, int, Hit], float]  # (pack answer, 1-based rank, hit)


def by_activation(result: SearchResult, rank: int, hit: Hit) -> float:
    """The default: the pack's activation x the hit's score relative to the pack's best
    (1 / rank when the pack's scores are not positive)."""
    best = max((h.score for h in result.hits if not h.requires_expanded), default=0.0)
    share = hit.score / best if best > 0 else 1.0 / rank
    return (result.activation or 0.0) * max(share, 0.0)


def by_activation_rank(offset: float) -> ScoreRule:
    """The pack's activation over (offset + rank within the pack): RRF over packs with the
    activation as weight (measured against the default in the merged evaluation)."""

    def score(result: SearchResult, rank: int, hit: Hit) -> float:
        return (result.activation or 0.0) / (offset + rank)

    return score


@dataclass(frozen=True)
class MergedHit:
    pack: str
    hit: Hit
    score: float  # comparable across packs; the pack's own score is `pack_score`

    def to_dict(self) -> dict[str, Any]:
        data = self.hit.to_dict()
        data["pack_score"] = data["score"]
        data["score"] = round(self.score, 6)
        data["pack"] = self.pack
        return data


@dataclass(frozen=True)
class MergedResult:
    query: str
    packs: tuple[str, ...]  # every pack searched
    mode: str  # the modes of the packs that answered (hybrid, lexical, ...), or empty
    hits: tuple[MergedHit, ...]
    took_ms: float = 0.0
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "query": self.query,
            "packs": list(self.packs),
            "mode": self.mode,
            "took_ms": round(self.took_ms, 2),
            "results": [h.to_dict() for h in self.hits],
        }
        if self.notes:
            data["notes"] = list(self.notes)
        return data


def merge_results(
    query: str,
    results: Sequence[SearchResult],
    k: int,
    rule: ScoreRule | None = None,
    took_ms: float = 0.0,
) -> MergedResult:
    """The packs' answers to ``query`` as one ranking of at most ``k`` hits (plus the
    ``requires:`` hits of the packs placed), best first; ties keep the order of ``results``."""
    rule = rule or by_activation
    answering = [r for r in results if r.hits and r.mode != "empty"]
    scored: list[tuple[float, int, int, MergedHit]] = []
    for p, result in enumerate(answering):
        ranked = [h for h in result.hits if not h.requires_expanded]
        for rank, hit in enumerate(ranked, start=1):
            s = rule(result, rank, hit)
            scored.append((-s, p, rank, MergedHit(result.pack, hit, s)))
    scored.sort(key=lambda t: t[:3])
    top = [m for *_, m in scored[:k]]
    placed = dict.fromkeys(m.pack for m in top)
    appended = [
        MergedHit(r.pack, h, 0.0)
        for r in answering
        if r.pack in placed
        for h in r.hits
        if h.requires_expanded
    ]
    modes = dict.fromkeys(r.mode for r in answering)
    notes = tuple(f"{r.pack}: {n}" for r in results for n in r.notes)
    return MergedResult(
        query=query,
        packs=tuple(r.pack for r in results),
        mode="+".join(modes) if modes else "empty",
        hits=(*top, *appended),
        took_ms=took_ms,
        notes=notes,
    )
