"""The record every stage passes along: one candidate chunk, its scores and how it got there."""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class Candidate:
    """A chunk in the running. Stages return new lists of new candidates; nothing mutates."""

    chunk_id: int
    path: str
    score: float = 0.0  # the current ranking score
    lexical_rank: int | None = None  # 1-based rank in the lexical leg
    lexical_score: float | None = None  # BM25 (higher is better)
    vector_rank: int | None = None
    vector_score: float | None = None  # cosine similarity to the query
    fused: float = 0.0  # score right after fusion
    type: str = ""
    tags: tuple[str, ...] = ()
    always: bool = False
    chars: int = 0
    tokens: int = 0
    age_stale: bool = False
    origin: str = "search"  # search | graph | requires
    via: str | None = None  # graph/requires: the file that pulled this one in
    hop: int = 0
    notes: tuple[str, ...] = ()  # why it moved, stage by stage (for --explain)

    def moved(self, score: float, note: str) -> Candidate:
        """This candidate with a new score and a note saying why."""
        return self._with(score=score, notes=(*self.notes, note))

    def rescored(self) -> Candidate:
        """This candidate with ``fused`` set to its current score (the lexical fallback's
        score stands in for fusion's)."""
        return self._with(fused=self.score)

    def noted(self, note: str) -> Candidate:
        return self._with(notes=(*self.notes, note))

    @classmethod
    def made(cls, **values: object) -> Candidate:
        """``Candidate(**values)`` without the frozen ``__init__``'s one ``object.__setattr__``
        per field (a query makes a few dozen): the defaults, then ``values``, set at once. For
        the pipeline's own calls, which name every field without a default and nothing else
        (unchecked)."""
        new = object.__new__(cls)
        new.__dict__.update(_DEFAULTS, **values)
        return new

    def _with(self, **changes: object) -> Candidate:
        """``dataclasses.replace`` without its per-call field walk (the stages call this a
        few dozen times a query): a copy of the fields, ``changes`` applied. No field has a
        default factory or a ``__post_init__``, so nothing is skipped."""
        new = object.__new__(Candidate)
        new.__dict__.update(self.__dict__, **changes)
        return new


# every field in order (so ``__dict__`` is laid out as ``__init__`` lays it out); the two
# without a default are always given
_DEFAULTS = {f.name: f.default for f in fields(Candidate)}


def by_score(candidates: list[Candidate]) -> list[Candidate]:
    """Best first; ties keep their incoming order (Python's sort is stable)."""
    return sorted(candidates, key=lambda c: -c.score)
