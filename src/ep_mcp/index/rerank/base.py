"""What a reranker is to the code that runs one: a name and ``score`` (the same shape as
``retrieval.rerank.Reranker``, which the ranking stage reads; kept here so this layer imports
nothing above it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Scorer(Protocol):
    @property
    def name(self) -> str: ...

    def score(self, query: str, passages: Sequence[str]) -> list[float]: ...
