"""Adaptive threshold (SPEC §4.5): negative queries answer nothing; far-below-best hits go.

The activation test combines the two legs: the best dense cosine (on the scale of one model)
plus a share of the lexical coverage (how many of the query's content terms one of the best
lexical hits contains). Cosine scales differ between models, so the floor carries the name of
the model it was calibrated for and is skipped for any other; the defaults were calibrated on
the golden sets with a held-out pack check (docs/bench/retrieval.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from ep_mcp.retrieval.candidates import Candidate
from ep_mcp.text import stem, words


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
    """The threshold stage's part of ``RetrievalSettings`` (built by ``retrieval.settings``)."""

    activation_floor: float  # hybrid: best cosine + coverage_weight x coverage below → empty
    coverage_weight: float
    lexical_coverage_floor: float  # lexical mode: coverage below → empty
    calibrated_for: str  # the embedding model the activation floor was calibrated for ("*" any)
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


def activation(ev: Evidence, coverage_weight: float) -> float | None:
    """Best cosine plus weighted lexical coverage (None without a dense leg)."""
    if ev.top_cosine is None:
        return None
    return ev.top_cosine + coverage_weight * ev.coverage


def is_negative(ev: Evidence, s: ThresholdSettings, model: str | None = None) -> bool:
    """True when the pack does not answer the query: nothing activated.

    With a dense leg: best cosine + ``coverage_weight`` x coverage below ``activation_floor``,
    applied only for the model the floor was calibrated for (a prefix of the index's model
    name, so the int8 graph and its dynamically quantised twin share it; other models' cosines
    live on other scales — recalibrate with ``ep-mcp eval``). Without one: coverage below
    ``lexical_coverage_floor``. Floors at 0 never empty an answer.
    """
    act = activation(ev, s.coverage_weight)
    if act is None:
        return ev.coverage < s.lexical_coverage_floor
    if s.calibrated_for != "*" and not (model or "").startswith(s.calibrated_for):
        return False
    return act < s.activation_floor


def drop_far_below(candidates: Sequence[Candidate], ratio: float) -> list[Candidate]:
    """Keep candidates scoring at least ``ratio`` x the best (input best first)."""
    if ratio <= 0 or not candidates:
        return list(candidates)
    best = max(c.score for c in candidates)
    return [c for c in candidates if c.score >= ratio * best]
