"""The embedder a deployment uses, built once from its settings: the provider, behind a circuit
breaker, behind the query-embedding cache; and the tokenizer that counts chunk tokens."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ep_mcp.config.model import Settings, default_home
from ep_mcp.index.embed.base import Embedder


def token_counter() -> Callable[[str], int]:
    """Tokens as the embedding model counts them (the chunk ceiling uses this count); its
    ``batch`` attribute counts many texts in one parallel call."""
    # optional: a provider's module and its dependency load only when chosen
    from ep_mcp.index.embed.local import count_tokens, count_tokens_batch

    def counted(text: str) -> int:
        return count_tokens(text)

    counted.batch = count_tokens_batch  # type: ignore[attr-defined]
    return counted


def make_embedder(settings: Settings) -> Embedder | None:
    """The configured provider wrapped in a breaker and a query cache; None for `none`. Its key
    and endpoint come in ``settings.embedding``, resolved at the edge."""
    # optional: a provider's module and its dependency load only when chosen
    from ep_mcp.index.embed import QueryEmbeddingCache, create_embedder
    from ep_mcp.index.embed.breaker import guard

    spec = settings.embedding
    if spec.cache_dir is None:  # the local model caches its optimised graph per user
        home = settings.home or default_home({})
        spec = dataclasses.replace(spec, cache_dir=home / "models")
    embedder = create_embedder(spec)
    if embedder is None:
        return None
    return QueryEmbeddingCache(guard(embedder, spec.breaker_failures, spec.breaker_cooldown_s))
