"""Answer-evidence stage: lexical signs that a chunk's file *answers* the query.

A file that merely shares the query's words (a glossary, a list of common mistakes, a
neighbouring skill) often outranks the one that answers it. Two signs separate them, both shares
of the query's content terms weighted by how rare each term is among the candidates (a term
every candidate carries says nothing about which one answers):

- **heading** — the terms in the file's title and the chunk's heading path: a page *about* the
  query names it in its headings;
- **section** — the terms in the chunk itself (its section of the file), so a chunk that covers
  every aspect of the query beats one that repeats a single word.

- **file support** — the second-best chunk of the same file among the candidates, as a share
  of the best score: a file with several sections on the query is about it.

Each adds ``weight x scale x share``. Pure: texts come in, candidates go out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ep_mcp.retrieval.candidates import Candidate, by_score
from ep_mcp.text import stem, words


@dataclass(frozen=True)
class AnswerFields:
    """What one candidate chunk says about itself: its headings (file title included) and text."""

    headings: str
    text: str


def term_weights(terms: Sequence[str], fields: Mapping[int, AnswerFields]) -> dict[str, float]:
    """Stemmed term → ``log(1 + n / (1 + df))``, df counted over the candidates' chunks."""
    stems = list(dict.fromkeys(stem(t) for t in terms))
    bags = [_stems(f.headings) | _stems(f.text) for f in fields.values()]
    n = len(bags)
    return {s: math.log(1 + n / (1 + sum(1 for b in bags if s in b))) for s in stems}


def weighted_share(weights: Mapping[str, float], text: str) -> float:
    """Weighted share of the terms found in ``text`` (0 when there are none)."""
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    found = _stems(text)
    return sum(w for s, w in weights.items() if s in found) / total


def apply_answer_evidence(
    candidates: Sequence[Candidate],
    terms: Sequence[str],
    fields: Mapping[int, AnswerFields],
    *,
    heading_weight: float,
    section_weight: float,
    file_weight: float = 0.0,
    scale: float,
) -> list[Candidate]:
    """Add ``scale x (heading_weight x heading share + section_weight x section share
    + file_weight x file support)``."""
    if heading_weight <= 0 and section_weight <= 0 and file_weight <= 0:
        return list(candidates)
    weights = term_weights(terms, fields)
    support = file_support(candidates)
    out = []
    for c in candidates:
        f = fields.get(c.chunk_id)
        if f is None:
            out.append(c)
            continue
        heading = weighted_share(weights, f.headings)
        section = weighted_share(weights, f.headings + "\n" + f.text)
        files = support.get(c.path, 0.0)
        bonus = scale * (heading_weight * heading + section_weight * section + file_weight * files)
        if bonus <= 0:
            out.append(c)
            continue
        note = (
            f"answer evidence: heading {heading:.2f}, section {section:.2f}, "
            f"file {files:.2f} +{bonus:.4f}"
        )
        out.append(c.moved(c.score + bonus, note))
    return by_score(out)


def file_support(candidates: Sequence[Candidate]) -> dict[str, float]:
    """Path → its second-best chunk's score over the best score of all (0 with one chunk)."""
    best = max((c.score for c in candidates), default=0.0)
    if best <= 0:
        return {}
    scores: dict[str, list[float]] = {}
    for c in candidates:
        scores.setdefault(c.path, []).append(c.score)
    return {p: sorted(v)[-2] / best if len(v) > 1 else 0.0 for p, v in scores.items()}


def _stems(text: str) -> set[str]:
    return {stem(w) for w in words(text)}
