"""Lexical fallback scoring (no vectors): BM25 plus coverage, density, path and length signals."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType

from ep_mcp.retrieval.candidates import Candidate, by_score
from ep_mcp.retrieval.fusion import normalise
from ep_mcp.retrieval.threshold import term_coverage
from ep_mcp.text import words


@dataclass(frozen=True)
class FallbackWeights:
    """The lexical fallback's part of ``RetrievalSettings`` (built by ``retrieval.settings``)."""

    coverage_weight: float
    density_weight: float
    path_weight: float
    length_weight: float
    length_chars: int


def lexical_signals(terms: Sequence[str], text: str, path: str) -> tuple[float, float, float]:
    """(coverage, density, path match) of ``terms`` over a chunk; each in [0, 1]."""
    coverage = term_coverage(terms, text)
    counts, total = _word_counts(text)
    hits = sum(counts.get(t, 0) for t in set(terms))  # the chunk's words that are query terms
    density = min(hits / max(total, 1) * 20, 1.0)
    low = path.lower()
    in_path = sum(1 for t in terms if t in low) / len(terms) if terms else 0.0
    return coverage, density, in_path


@lru_cache(maxsize=4096)
def _word_counts(text: str) -> tuple[Mapping[str, int], int]:
    """How often each word occurs in ``text``, and how many words it has: counted once per
    distinct text (the same chunks come back query after query; a lexical-mode query read
    every candidate's words again, most of its time). Read-only."""
    found = words(text)
    return MappingProxyType(Counter(found)), len(found)


def score_lexically(
    terms: Sequence[str],
    candidates: Sequence[Candidate],
    texts: dict[int, str],
    w: FallbackWeights,
) -> list[Candidate]:
    """Re-score lexical candidates: normalised BM25 + weighted signals, best first."""
    bm25 = normalise([(c.chunk_id, c.lexical_score or 0.0) for c in candidates])
    out = []
    for c in candidates:
        text = texts.get(c.chunk_id, "")
        cov, dens, in_path = lexical_signals(terms, text, c.path)
        length = min(len(text) / w.length_chars, 1.0)
        score = (
            bm25.get(c.chunk_id, 0.0)
            + w.coverage_weight * cov
            + w.density_weight * dens
            + w.path_weight * in_path
            + w.length_weight * length
        )
        note = (
            f"lexical fallback: bm25 {bm25.get(c.chunk_id, 0.0):.3f} + coverage {cov:.2f} "
            f"+ density {dens:.2f} + path {in_path:.2f} + length {length:.2f}"
        )
        out.append(c.moved(score, note))
    return by_score(out)
