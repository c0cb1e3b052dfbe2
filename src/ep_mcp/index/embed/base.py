"""The embedder seam: a Protocol with two methods and a registry of factories."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias, runtime_checkable

from ep_mcp.config.model import EmbeddingSpec

if TYPE_CHECKING:  # numpy stays unimported until vectors are made (fast `ep-mcp index` no-op)
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "Embedder",
    "EmbedderFactory",
    "EmbeddingSpec",
    "Matrix",
    "QueryCost",
    "Windowed",
    "factory_for",
    "providers",
    "query_cost",
    "register",
    "settle",
    "windowed",
]

Matrix: TypeAlias = "npt.NDArray[np.float32]"


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 rows."""

    @property
    def name(self) -> str:
        """Stable identity for caches and index metadata, e.g. ``local/all-MiniLM-L6-v2-int8``."""
        ...

    @property
    def dimension(self) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        """Embed passages; shape (len(texts), dimension), rows unit length."""
        ...

    def embed_query(self, text: str) -> Matrix:
        """Embed one query; shape (dimension,), unit length."""
        ...


@runtime_checkable
class Windowed(Protocol):
    """An embedder that reads a fixed window of the chunker's word-pieces and can say where
    they fall: long chunks are then embedded as several windows (``index.windows``)."""

    @property
    def window_tokens(self) -> int:
        """Word-pieces the model reads per text, [CLS] and [SEP] included."""
        ...

    def token_spans(self, texts: Sequence[str]) -> list[list[tuple[int, int]]]:
        """(start, end) character offsets of each word-piece of each text (no special ones)."""
        ...


class EmbedderWrapper:
    """An embedder around another (``embedder``): it goes by the inner one's name and
    dimension (a cache, a circuit breaker)."""

    embedder: Embedder

    @property
    def name(self) -> str:
        return self.embedder.name

    @property
    def dimension(self) -> int:
        return self.embedder.dimension


def windowed(embedder: object) -> Windowed | None:
    """The embedder (or the one a wrapper holds) as a ``Windowed`` one, or None: an embedder
    whose window is unknown (an HTTP provider) embeds each chunk whole, as it truncates it."""
    while embedder is not None:
        if isinstance(embedder, Windowed):
            return embedder
        inner = getattr(embedder, "embedder", None)
        embedder = inner if inner is not embedder else None
    return None


QueryCost = Literal["trivial", "compute", "network"]
"""What embedding one query costs, as an embedder declares it (attribute ``query_cost``):
`trivial` (pure Python, microseconds), `compute` (a model on this machine), `network` (a
remote provider). Serving runs trivial queries on its event loop, the rest on threads."""


def query_cost(embedder: object) -> QueryCost:
    """The embedder's declared ``query_cost``; wrappers pass their inner embedder's on."""
    declared = getattr(embedder, "query_cost", None)
    if declared in ("trivial", "compute", "network"):
        return declared  # type: ignore[no-any-return]
    inner = getattr(embedder, "embedder", None)
    return query_cost(inner) if inner is not None and inner is not embedder else "compute"


def settle(embedder: object) -> None:
    """Make the embedder's name final before vectors are made under it: an embedder (or the
    one a wrapper holds) with a ``settle`` method may name a model it has not loaded yet."""
    while embedder is not None:
        method = getattr(embedder, "settle", None)
        if callable(method):
            method()
            return
        inner = getattr(embedder, "embedder", None)
        embedder = inner if inner is not embedder else None


EmbedderFactory = Callable[[EmbeddingSpec, "dict[str, str]"], Embedder | None]
"""Builds an embedder from its spec and the environment; returns None for provider `none`."""

_REGISTRY: dict[str, EmbedderFactory] = {}


def register(provider: str, factory: EmbedderFactory) -> None:
    _REGISTRY[provider] = factory


def providers() -> list[str]:
    return sorted(_REGISTRY)


def factory_for(provider: str) -> EmbedderFactory | None:
    return _REGISTRY.get(provider)


def key_dimension(key: str) -> int:
    """The dimension in an embedding-cache key (``embedplan.cache_key``:
    ``model|dimension|digest``), 0 if none: a cached vector of another length is damaged, and
    embedded again. Every engine's cache reads check it (SQLite's and PostgreSQL's)."""
    parts = key.split("|")
    return int(parts[-2]) if len(parts) >= 3 and parts[-2].isdigit() else 0
