"""The "no answer" floor (SPEC §4.5) of ``ep_search`` and ``skill_search`` — here and nowhere else.

A ranked list always has a first hit, so an off-topic query would get confident noise. The
evidence is what the legs already hold: the best dense cosine (on the scale of one model) plus a
share of the lexical coverage (how many of the query's content terms one of the best lexical
hits — for the hub, one of the first skills — contains), less a penalty for the share of terms
no document holds at all (the hub's; 0 for packs). Cosine scales differ between models, so the
floor carries the name of the model it was calibrated for: with another model's cosines, or
without a dense leg, the term coverage alone decides, against its own floor (coverage is on one
scale whatever embeds). Floors are chosen by ``eval.floors`` (docs/bench/retrieval.md,
docs/BENCHMARKS.md). Pure: evidence in, verdict out; then far-below-best hits go.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from ep_mcp.retrieval.candidates import Candidate
from ep_mcp.text import stem, words

HYBRID = "hybrid"  # best cosine + weighted coverage (- unknown penalty) against ``Floor.hybrid``
LEXICAL = "lexical"  # term coverage alone against ``Floor.lexical``


@dataclass(frozen=True)
class Evidence:
    """What the legs say about whether the documents answer the query at all."""

    top_cosine: float | None  # best dense cosine (None: no dense leg)
    cosine_margin: float | None  # best cosine - mean of the pool's top 10 .. 30
    coverage: float  # best share of query terms found in one of the top lexical hits
    terms: int  # content terms in the query
    unknown: float = 0.0  # share of the query's terms no document holds (the hub's evidence)

    def describe(self) -> str:
        cos = "n/a" if self.top_cosine is None else f"{self.top_cosine:.3f}"
        margin = "n/a" if self.cosine_margin is None else f"{self.cosine_margin:.3f}"
        return f"top cosine {cos}, cosine margin {margin}, term coverage {self.coverage:.2f}"


@dataclass(frozen=True)
class Floor:
    """The "no answer" floor: ``retrieval.activation_*`` (packs), ``hub.min_match*`` (skills)."""

    hybrid: (
        float  # best cosine + coverage_weight x coverage - unknown_penalty x unknown below → none
    )
    coverage_weight: float
    lexical: float  # coverage below → none (no dense leg, or cosines of another model)
    calibrated_for: str  # prefix of the embedding model ``hybrid`` was chosen for; "*" any
    unknown_penalty: float = 0.0


@dataclass(frozen=True)
class Verdict:
    score: float  # the evidence on the floor's scale
    floor: float
    rule: str  # HYBRID or LEXICAL

    @property
    def answered(self) -> bool:
        return self.score >= self.floor


@dataclass(frozen=True)
class ThresholdSettings:
    """The threshold stage's part of ``RetrievalSettings`` (built by ``retrieval.settings``)."""

    floor: Floor
    score_ratio: float  # keep score >= ratio x best (0 = keep all)


@lru_cache(maxsize=4096)
def _stems(text: str) -> frozenset[str]:
    """The crude stems of a text's words (memoised: the same chunks recur across queries)."""
    return frozenset(stem(w) for w in set(words(text)))


def term_coverage(terms: Sequence[str], text: str) -> float:
    """Share of ``terms`` (lower case) that occur in ``text``, matched on crude stems."""
    if not terms:
        return 0.0
    stems = _stems(text)
    found = sum(1 for t in terms if stem(t) in stems)
    return found / len(terms)


def best_coverage(terms: Sequence[str], texts: Sequence[str]) -> float:
    """Best share of ``terms`` found in one of ``texts``."""
    return max((term_coverage(terms, t) for t in texts), default=0.0)


def cosine_margin(cosines: Sequence[float]) -> float | None:
    """Best cosine minus the mean of ranks 10..30: how much the top stands out of the crowd."""
    if len(cosines) < 12:
        return None
    tail = list(cosines[9:30])
    return cosines[0] - sum(tail) / len(tail)


def gather_evidence(
    terms: Sequence[str],
    lexical_texts: Sequence[str],
    cosines: Sequence[float],
) -> Evidence:
    """Evidence from the top lexical hits' texts and the dense leg's cosines (best first)."""
    return Evidence(
        top_cosine=cosines[0] if cosines else None,
        cosine_margin=cosine_margin(cosines),
        coverage=best_coverage(terms, lexical_texts),
        terms=len(terms),
    )


def activation(ev: Evidence, coverage_weight: float) -> float | None:
    """Best cosine plus weighted lexical coverage (None without a dense leg)."""
    if ev.top_cosine is None:
        return None
    return ev.top_cosine + coverage_weight * ev.coverage


def calibrated(floor: Floor, model: str | None) -> bool:
    """Were the cosines of ``model`` what ``floor.hybrid`` was chosen on? A prefix of the model's
    name, so the int8 graph and its dynamically quantised twin share it."""
    return floor.calibrated_for == "*" or (model or "").startswith(floor.calibrated_for)


def judge(ev: Evidence, floor: Floor, model: str | None) -> Verdict:
    """The verdict: the hybrid rule when the cosines come from the model the floor was
    calibrated for, else term coverage alone. Floors at 0 (or -inf) never withhold an answer."""
    act = activation(ev, floor.coverage_weight)
    if act is not None and calibrated(floor, model):
        return Verdict(act - floor.unknown_penalty * ev.unknown, floor.hybrid, HYBRID)
    return Verdict(ev.coverage, floor.lexical, LEXICAL)


def drop_far_below(candidates: Sequence[Candidate], ratio: float) -> list[Candidate]:
    """Keep candidates scoring at least ``ratio`` x the best (input best first)."""
    if ratio <= 0 or not candidates:
        return list(candidates)
    best = max(c.score for c in candidates)
    return [c for c in candidates if c.score >= ratio * best]
