"""Embedding providers.

``create_embedder(spec, env)`` builds the configured one (``local`` by default, ``none`` for
lexical-only, HTTP providers with keys from ``env``); ``HashingEmbedder`` is the deterministic fake
for tests; ``QueryEmbeddingCache`` remembers query vectors. The model-specific modules (``local``,
``remote``) are imported only when used.
"""

from ep_mcp.index.embed.base import Embedder, EmbeddingSpec, Matrix, register
from ep_mcp.index.embed.cache import QueryEmbeddingCache
from ep_mcp.index.embed.fake import HashingEmbedder
from ep_mcp.index.embed.registry import create_embedder

__all__ = [
    "Embedder",
    "EmbeddingSpec",
    "HashingEmbedder",
    "Matrix",
    "QueryEmbeddingCache",
    "create_embedder",
    "register",
]
