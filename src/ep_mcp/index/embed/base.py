"""The embedder seam: a Protocol with two methods and a registry of factories."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias, runtime_checkable

if TYPE_CHECKING:  # numpy stays unimported until vectors are made (fast `ep-mcp index` no-op)
    import numpy as np
    import numpy.typing as npt

Matrix: TypeAlias = "npt.NDArray[np.float32]"


@dataclass(frozen=True)
class EmbeddingSpec:
    """What the settings say about the embedder (resolved once at the edge)."""

    provider: str = "local"  # local | none | openai | azure-openai | gemini | voyage | <registered>
    model: str | None = None  # provider default when None
    dimension: int | None = None  # provider default when None (MRL truncation where supported)
    batch_size: int = 8
    max_tokens: int = 256  # truncation for the local model
    timeout_s: float = 30.0  # per HTTP request while indexing
    retries: int = 3  # while indexing; a query makes one attempt
    query_timeout_s: float = 1.5  # per HTTP request while a query waits
    breaker_failures: int = 3  # consecutive failures that open the circuit
    breaker_cooldown_s: float = 30.0  # then calls fail at once this long, before one probe
    endpoint: str | None = None  # base URL override (HTTP providers; tests point it at 127.0.0.1)
    api_key_env: str | None = None  # env var holding the key (provider default when None)
    cache_dir: Path | None = None  # the local model caches its optimised graph here (<home>/models)


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


EmbedderFactory = Callable[[EmbeddingSpec, "dict[str, str]"], Embedder | None]
"""Builds an embedder from its spec and the environment; returns None for provider `none`."""

_REGISTRY: dict[str, EmbedderFactory] = {}


def register(provider: str, factory: EmbedderFactory) -> None:
    _REGISTRY[provider] = factory


def providers() -> list[str]:
    return sorted(_REGISTRY)


def factory_for(provider: str) -> EmbedderFactory | None:
    return _REGISTRY.get(provider)
