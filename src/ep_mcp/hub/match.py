"""Does any skill match? The hub's "no skill matches" rule (issue #11, item 3).

A ranked list always has a first skill, so an off-topic task ("a marinade for grilled chicken")
would get a confident wrong one. The evidence is what the legs already hold: the best dense
cosine between the task and any chunk of any tap, how much of the task's content vocabulary
the first few skills hold (each one's card — name, description, headings — and best section),
and the share of its terms that no tap holds at all (a task for a skill nobody tapped names
things — Kotlin, Solidity, Helm — the taps never mention; issue #25).
Below the floor the hub answers no skill and says so. The floor is chosen on the golden dev
queries (``ep-mcp bench skills --match``, docs/BENCHMARKS.md) for one embedder; with another
(or without vectors) the coverage alone decides, against its own floor. Pure: evidence in,
verdict out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ep_mcp.retrieval.threshold import term_coverage

MATCH_DEPTH = 5  # the first skills whose cards and sections count for coverage
NO_MATCH = "no skill matches this task"


@dataclass(frozen=True)
class MatchEvidence:
    top_cosine: float | None  # best cosine of the task with any chunk (None: no dense leg)
    coverage: float  # best share of the task's terms found in one of the first skills
    terms: int  # content terms in the task
    unknown: float = 0.0  # share of the task's terms that no chunk of any tap holds


@dataclass(frozen=True)
class MatchFloor:
    """The ``skills.min_match*`` settings."""

    min_match: float  # best cosine + coverage_weight x coverage below → no skill
    coverage_weight: float
    min_lexical: float  # without vectors (or with an embedder it was not chosen for): coverage
    calibrated_for: str  # prefix of the embedder ``min_match`` was chosen for; "*" any
    unknown_penalty: float = 0.0  # subtracted per share of the task's terms no tap holds


@dataclass(frozen=True)
class MatchVerdict:
    score: float  # the evidence on the floor's scale
    floor: float
    rule: str  # "hybrid" (cosine + coverage) or "lexical" (coverage alone)

    @property
    def matched(self) -> bool:
        return self.score >= self.floor

    def describe(self) -> str:
        if self.rule == "hybrid":
            return f"match {self.score:.2f} < skills.min_match {self.floor}"
        return f"term coverage {self.score:.2f} < skills.min_match_lexical {self.floor}"


def unknown_share(terms: Sequence[str], known: Callable[[str], bool]) -> float:
    """Share of ``terms`` that ``known`` (does any tap hold it?) says no to."""
    return sum(not known(t) for t in terms) / len(terms) if terms else 0.0


def match_coverage(terms: Sequence[str], texts: Sequence[str]) -> float:
    """Best share of ``terms`` found in one of ``texts`` (crude stems, as the packs' floor)."""
    return max((term_coverage(terms, t) for t in texts), default=0.0)


def judge_match(evidence: MatchEvidence, floor: MatchFloor, embedder: str | None) -> MatchVerdict:
    """The verdict: the hybrid rule when the cosines come from the embedder the floor was
    chosen for, else coverage alone."""
    calibrated = floor.calibrated_for == "*" or (
        embedder is not None and embedder.startswith(floor.calibrated_for)
    )
    if evidence.top_cosine is not None and calibrated:
        score = (
            evidence.top_cosine
            + floor.coverage_weight * evidence.coverage
            - floor.unknown_penalty * evidence.unknown
        )
        return MatchVerdict(score, floor.min_match, "hybrid")
    return MatchVerdict(evidence.coverage, floor.min_lexical, "lexical")


def no_match_note(verdict: MatchVerdict, *, shown: bool) -> str:
    """The note of a withheld (or, asked for, shown) answer; adapters add how to see more."""
    if shown:
        return f"{NO_MATCH} well ({verdict.describe()}) — the closest skills are shown anyway"
    return f"{NO_MATCH} ({verdict.describe()})"
