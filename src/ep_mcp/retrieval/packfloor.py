"""A pack's own "not covered" floor, fitted when its index is built (issue #18, build 4).

The global ``min_answerable`` is one number for every collection; a pack whose questions all
score high (its files are each about one thing, its words its own) can afford a higher floor
than one whose answers are spread thin. The pack says which: its titles, headings and
frontmatter ``questions`` are questions it answers (*probes*); off-topic questions shipped with
ep-mcp (``data/offtopic.txt``) are ones it does not, asked to check the floor (how many it
catches is stored beside it). Asked of the fresh index, the probes' ``answerable`` values place
the floor: their ``quantile``, never below the global floor nor above ``cap``. Pure: probes and
scores in, a floor out; asking them is the runtime's (``pack_calibration``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ep_mcp.packs.models import Document

_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
MIN_WORDS = 2  # a heading of one word ("Overview") is no question
MAX_WORDS = 20


@dataclass(frozen=True)
class PackFloorSettings:
    quantile: float  # the floor is this quantile of the probes' answerable values
    cap: float  # never above this
    probes: int  # at most this many probes asked (a seeded choice)

    def rule(self, global_floor: float) -> str:
        """What a stored floor was fitted under (other settings: fit again)."""
        return f"q{self.quantile}/cap{self.cap}/n{self.probes}/global{global_floor}"


@dataclass(frozen=True)
class PackFloor:
    """The floor one build fitted, and what it was fitted on (kept in the index meta)."""

    floor: float
    model: str  # the confidence model's signature (a new model invalidates the floor)
    generation: str  # the index generation it was fitted on
    rule: str  # ``PackFloorSettings.rule``: the settings it was fitted under
    probes: int
    withheld: int  # probes under the floor
    off_topic: int
    caught: int  # off-topic questions under the floor

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def floor_from_json(raw: str | None) -> PackFloor | None:
    """The stored floor, or None when there is none or it does not read (then: the global)."""
    if not raw:
        return None
    try:
        data = json.loads(raw)
        return PackFloor(
            floor=float(data["floor"]),
            model=str(data["model"]),
            generation=str(data["generation"]),
            rule=str(data["rule"]),
            probes=int(data["probes"]),
            withheld=int(data["withheld"]),
            off_topic=int(data["off_topic"]),
            caught=int(data["caught"]),
        )
    except (ValueError, KeyError, TypeError):
        return None


def model_signature(model: Mapping[str, Any]) -> str:
    """A short hash of a confidence model's dict (its weights decide every ``answerable``)."""
    blob = json.dumps(model, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def _headings(doc: Document) -> Iterable[str]:
    fenced = False
    for line in doc.text.splitlines()[max(doc.body_line - 1, 0) :]:
        if _FENCE.match(line):
            fenced = not fenced
            continue
        m = None if fenced else _HEADING.match(line)
        if m:
            yield m.group(1).strip()


def _frontmatter_questions(doc: Document) -> Iterable[str]:
    for key in ("questions", "eval"):
        value = doc.meta.get(key)
        for item in value if isinstance(value, list) else ():
            text = item.get("question") if isinstance(item, Mapping) else item
            if isinstance(text, str):
                yield text


def _usable(text: str) -> bool:
    n = len(re.findall(r"[A-Za-z]{2,}", text))
    return MIN_WORDS <= n <= MAX_WORDS


def probes(documents: Sequence[Document], limit: int) -> tuple[str, ...]:
    """Questions the pack answers: its files' titles, headings and frontmatter questions
    (navigation files left out), deduplicated, at most ``limit`` chosen by a hash of the text
    (the same pack gives the same probes)."""
    found: dict[str, None] = {}
    for doc in documents:
        if doc.navigation:
            continue
        for text in (doc.title, *_headings(doc), *_frontmatter_questions(doc)):
            text = " ".join(text.split())
            if text and _usable(text):
                found.setdefault(text, None)
    chosen = sorted(found, key=lambda t: hashlib.sha256(t.encode()).hexdigest())
    return tuple(chosen[:limit])


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def fit_floor(answered: Sequence[float], global_floor: float, settings: PackFloorSettings) -> float:
    """The pack's floor from its probes' ``answerable`` values: their ``quantile``, within
    [``global_floor``, ``cap``]. Too few probes (< 10): the global floor."""
    if len(answered) < 10:
        return global_floor
    floor = min(max(_quantile(answered, settings.quantile), global_floor), settings.cap)
    return round(floor, 4)


def count_under(values: Iterable[float], floor: float) -> int:
    return sum(1 for v in values if v < floor)
