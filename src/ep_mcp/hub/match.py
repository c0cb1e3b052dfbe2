"""Does any skill match? The hub's "no skill matches" rule (issue #11, item 3).

A ranked list always has a first skill, so an off-topic task ("a marinade for grilled chicken")
would get a confident wrong one. The evidence is what the legs already hold: the best dense
cosine between the task and any chunk of any tap, how much of the task's content vocabulary
the first few skills hold (each one's card — name, description, headings — and best section),
and the share of its terms that no tap holds at all (a task for a skill nobody tapped names
things — Kotlin, Solidity, Helm — the taps never mention; issue #25).
The verdict is ``ep_search``'s own floor (``retrieval.threshold.judge``) on the ``hub.min_match*``
settings, chosen on the golden dev queries (``ep-mcp bench skills --match``, docs/BENCHMARKS.md)
for one embedder; with another (or without vectors) the coverage alone decides, against its own
floor. This module holds only what is the hub's: its settings, its evidence depth, its note.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ep_mcp.config.model import HubSettings
from ep_mcp.retrieval import threshold as th

MATCH_DEPTH = 5  # the first skills whose cards and sections count for coverage
NO_MATCH = "no skill matches this task"


def match_floor(hub: HubSettings) -> th.Floor:
    """The hub's floor, from the ``hub.min_match*`` settings (``ep_search``'s is
    ``retrieval.settings.activation_floor``)."""
    return th.Floor(
        hybrid=hub.min_match,
        coverage_weight=hub.match_coverage_weight,
        lexical=hub.min_match_lexical,
        calibrated_for=hub.match_model,
        unknown_penalty=hub.match_unknown_penalty,
    )


def unknown_share(terms: Sequence[str], known: Callable[[str], bool]) -> float:
    """Share of ``terms`` that ``known`` (does any tap hold it?) says no to."""
    return sum(not known(t) for t in terms) / len(terms) if terms else 0.0


def describe(verdict: th.Verdict) -> str:
    """Why no skill matched, naming the setting the score fell under."""
    if verdict.rule == th.HYBRID:
        return f"match {verdict.score:.2f} < hub.min_match {verdict.floor}"
    return f"term coverage {verdict.score:.2f} < hub.min_match_lexical {verdict.floor}"


def no_match_note(verdict: th.Verdict, *, shown: bool) -> str:
    """The note of a withheld (or, asked for, shown) answer; adapters add how to see more."""
    if shown:
        return f"{NO_MATCH} well ({describe(verdict)}) — the closest skills are shown anyway"
    return f"{NO_MATCH} ({describe(verdict)})"
