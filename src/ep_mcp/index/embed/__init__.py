"""Embedding providers.

``create_embedder(spec, env)`` builds the configured one (``local`` by default, ``none`` for
lexical-only, HTTP providers with keys from ``env``); ``HashingEmbedder`` is the deterministic fake
for tests; ``QueryEmbeddingCache`` remembers query vectors. Everything but the seam in ``base`` is
imported on first use, so reading settings never pulls in numpy or a model runtime.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ep_mcp.index.embed.base import Embedder, EmbeddingSpec, Matrix, register

if TYPE_CHECKING:
    from ep_mcp.index.embed.cache import QueryEmbeddingCache
    from ep_mcp.index.embed.fake import HashingEmbedder
    from ep_mcp.index.embed.registry import create_embedder

_LAZY = {"QueryEmbeddingCache": "cache", "HashingEmbedder": "fake", "create_embedder": "registry"}

__all__ = [
    "Embedder",
    "EmbeddingSpec",
    "HashingEmbedder",
    "Matrix",
    "QueryEmbeddingCache",
    "create_embedder",
    "register",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
