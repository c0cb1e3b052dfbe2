"""A deterministic, dependency-free embedder: hashed bag of words.

Used by tests everywhere and available as provider ``hashing`` (tiny, fast, offline). Texts that
share words get similar vectors; nothing more is promised.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from ep_mcp.errors import EmbeddingError
from ep_mcp.index.embed.base import EmbeddingSpec, Matrix
from ep_mcp.text import identifier_words, stem

_EMPTY = "\x00empty"  # the feature of a text with no words, so every row is still unit length


def _features(text: str) -> list[str]:
    return [stem(word) for word in identifier_words(text)]


class HashingEmbedder:
    """Signed feature hashing of stemmed lowercase words, sublinear counts, L2-normalised."""

    query_cost = "trivial"

    def __init__(self, dimension: int = 64) -> None:
        if dimension < 2:
            raise EmbeddingError(f"hashing dimension is {dimension} — use 2 or more")
        self._dimension = dimension

    @property
    def name(self) -> str:
        return f"fake/hashing-{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def _vector(self, text: str) -> Matrix:
        vector = np.zeros(self._dimension, dtype=np.float64)
        counts = Counter(_features(text)) or Counter([_EMPTY])
        for word, count in counts.items():
            digest = hashlib.blake2b(word.encode("utf-8", "surrogatepass"), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            sign = 1.0 if value & 1 else -1.0
            vector[(value >> 1) % self._dimension] += sign * (1.0 + math.log(count))
        norm = float(np.linalg.norm(vector))
        if norm == 0.0:  # every feature cancelled out: fall back to a fixed axis
            vector[0], norm = 1.0, 1.0
        return (vector / norm).astype(np.float32)

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        out = np.empty((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row] = self._vector(text)
        return out

    def embed_query(self, text: str) -> Matrix:
        return self._vector(text)


_PIECE = re.compile(r"\S+")


class WindowedHashingEmbedder(HashingEmbedder):
    """The hashing fake reading only its first ``window - 2`` pieces (whitespace-separated
    words) of each text, as a model truncates: a test of embedding windows, whose pieces it
    names (``token_spans``)."""

    def __init__(self, dimension: int = 64, window: int = 16) -> None:
        super().__init__(dimension)
        self._window = window

    @property
    def name(self) -> str:
        return f"fake/hashing-{self.dimension}-w{self._window}"

    @property
    def window_tokens(self) -> int:
        return self._window

    def token_spans(self, texts: Sequence[str]) -> list[list[tuple[int, int]]]:
        return [[m.span() for m in _PIECE.finditer(text)] for text in texts]

    def _vector(self, text: str) -> Matrix:
        spans = self.token_spans([text])[0]
        read = text[: spans[self._window - 3][1]] if len(spans) > self._window - 2 else text
        return super()._vector(read)


def hashing_factory(spec: EmbeddingSpec, env: dict[str, str]) -> HashingEmbedder:
    del env
    return HashingEmbedder(spec.dimension or 64)
