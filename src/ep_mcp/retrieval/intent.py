"""Intent routing without an LLM: a query's shape picks the fusion weights (SPEC §4.1)."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Intent:
    name: str  # ENTITY | HOW | WHY | WHEN | GENERAL
    vector_weight: float
    text_weight: float


# Tried in this order; the first pattern that matches wins.
_PATTERNS: tuple[tuple[str, str, float], ...] = (
    (
        "WHEN",
        r"\bwhen (?:was|is|did|does|will|should)\b|\b(?:which|what) version\b|"
        r"\brelease (?:of|date|notes?)\b|\badded in\b|\bsince version\b|\bchangelog\b|"
        r"\bhistory of\b|\bdeprecated in\b|\bavailable (?:since|in)\b",
        0.40,
    ),
    (
        "HOW",
        r"\bhow (?:do|does|can|should|to|would|much|many)\b|\bsteps? (?:to|for)\b|"
        r"\bguide (?:to|for)\b|\binstructions? (?:for|to)\b|\bconfigure\b|\bset ?up\b|"
        r"\benable\b|\bdisable\b|\binstall\b|\bdeploy\b",
        0.80,
    ),
    (
        "WHY",
        r"\bwhy\b|\breason (?:for|why|behind)\b|\bpurpose of\b|\bbenefits? of\b|"
        r"\badvantages? of\b|\bdifference between\b|\bcompared? (?:to|with)\b|\bvs\.?\b",
        0.80,
    ),
    (
        "ENTITY",
        r"\bwhat (?:is|are|does|do)\b|\bwhat's\b|\bdefine\b|\bdefinition of\b|"
        r"\bexplain\b|\bdescribe\b|\btell me about\b|\boverview of\b|\bmeaning of\b",
        0.45,
    ),
)
_COMPILED = tuple((name, re.compile(rx, re.IGNORECASE), w) for name, rx, w in _PATTERNS)


def classify_intent(query: str, general_vector_weight: float = 0.7) -> Intent:
    """ENTITY / HOW / WHY / WHEN by pattern, else GENERAL with the configured weights."""
    for name, pattern, vector_weight in _COMPILED:
        if pattern.search(query):
            return Intent(name, vector_weight, round(1.0 - vector_weight, 6))
    return Intent("GENERAL", general_vector_weight, round(1.0 - general_vector_weight, 6))
