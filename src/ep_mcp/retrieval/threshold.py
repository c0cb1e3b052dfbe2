"""Adaptive threshold (SPEC §4.5): negative queries answer nothing; far-below-best hits go.

Absolute score floors do not transfer across embedding models, so the activation test looks at
evidence that does: how many of the query's content terms the best lexical hits contain
(coverage), and how far the best dense hit stands above the rest of its pool (the cosine
margin), next to the raw best cosine. Each floor is a setting; the defaults were calibrated on
the golden sets (docs/bench/retrieval.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ep_mcp.retrieval.candidates import Candidate

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


@dataclass(frozen=True)
class Evidence:
    """What the two legs say about whether the pack answers the query at all."""

    top_cosine: float | None  # best dense cosine (None: no dense leg)
    cosine_margin: float | None  # best cosine - mean of the pool's top 10 .. 30
    coverage: float  # best share of query terms found in one of the top lexical hits
    terms: int  # content terms in the query

    def describe(self) -> str:
        cos = "n/a" if self.top_cosine is None else f"{self.top_cosine:.3f}"
        margin = "n/a" if self.cosine_margin is None else f"{self.cosine_margin:.3f}"
        return f"top cosine {cos}, cosine margin {margin}, term coverage {self.coverage:.2f}"


@dataclass(frozen=True)
class ThresholdSettings:
    cosine_floor: float = 0.0  # below: the dense leg saw nothing close
    margin_floor: float = 0.0
    coverage_floor: float = 0.0  # below: the lexical leg matched too few query terms
    score_ratio: float = 0.0  # keep score ≥ ratio x best (0 = keep all)


def _stem(word: str) -> str:
    for suffix in ("ing", "ies", "es", "ed", "ly", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def term_coverage(terms: Sequence[str], text: str) -> float:
    """Share of ``terms`` (lower case) that occur in ``text``, matched on crude stems."""
    if not terms:
        return 0.0
    words = {_stem(w) for w in _WORD.findall(text.lower())}
    found = sum(1 for t in terms if _stem(t) in words)
    return found / len(terms)


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
    coverage = max((term_coverage(terms, t) for t in lexical_texts), default=0.0)
    return Evidence(
        top_cosine=cosines[0] if cosines else None,
        cosine_margin=cosine_margin(cosines),
        coverage=coverage,
        terms=len(terms),
    )


def is_negative(ev: Evidence, s: ThresholdSettings) -> bool:
    """True when neither leg found anything worth answering with.

    Answered when the lexical leg covers enough of the query's terms, or the dense leg is
    close enough (cosine floor) and clearly above the crowd (margin floor). All floors 0: never
    negative. Without a dense leg only coverage decides.
    """
    lexical_ok = ev.coverage >= s.coverage_floor and (ev.coverage > 0 or s.coverage_floor <= 0)
    if ev.top_cosine is None:
        return not lexical_ok
    dense_ok = ev.top_cosine >= s.cosine_floor and (
        ev.cosine_margin is None or ev.cosine_margin >= s.margin_floor
    )
    return not (lexical_ok or dense_ok)


def drop_far_below(candidates: Sequence[Candidate], ratio: float) -> list[Candidate]:
    """Keep candidates scoring at least ``ratio`` x the best (input best first)."""
    if ratio <= 0 or not candidates:
        return list(candidates)
    best = max(c.score for c in candidates)
    return [c for c in candidates if c.score >= ratio * best]
