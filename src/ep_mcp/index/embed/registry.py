"""Built-in providers and ``create_embedder``: the one way the rest of ep-mcp gets an embedder.

Built-ins are registered on first use and each imports its module only when chosen, so asking for
``none`` never loads onnxruntime and asking for ``local`` never loads httpx. A provider registered
earlier under the same name (a plugin, a test) wins over the built-in.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from ep_mcp.errors import EmbeddingError
from ep_mcp.index.embed.base import (
    Embedder,
    EmbedderFactory,
    EmbeddingSpec,
    factory_for,
    providers,
    register,
)

_builtins_lock = threading.Lock()
_builtins_done = False


def _none(spec: EmbeddingSpec, env: dict[str, str]) -> Embedder | None:
    """Provider ``none``: no vectors, lexical search only."""
    return None


def _local(spec: EmbeddingSpec, env: dict[str, str]) -> Embedder | None:
    # optional: a provider's module and its dependency load only when chosen
    from ep_mcp.index.embed.local import LocalEmbedder

    return LocalEmbedder(spec)


def _hashing(spec: EmbeddingSpec, env: dict[str, str]) -> Embedder | None:
    # optional: a provider's module and its dependency load only when chosen
    from ep_mcp.index.embed.fake import hashing_factory

    return hashing_factory(spec, env)


def _remote(provider: str) -> EmbedderFactory:
    def factory(spec: EmbeddingSpec, env: dict[str, str]) -> Embedder | None:
        # optional: a provider's module and its dependency load only when chosen
        from ep_mcp.index.embed.providers import PROVIDERS

        return PROVIDERS[provider](spec, env)

    factory.__name__ = f"_{provider.replace('-', '_')}"
    return factory


BUILTINS: dict[str, EmbedderFactory] = {
    "local": _local,
    "none": _none,
    "hashing": _hashing,
    **{
        name: _remote(name)
        for name in ("openai", "openai-compatible", "azure-openai", "gemini", "voyage")
    },
}


def register_builtins() -> None:
    """Register the built-in providers (idempotent; existing registrations are kept)."""
    global _builtins_done
    with _builtins_lock:
        if _builtins_done:
            return
        known = set(providers())
        for name, factory in BUILTINS.items():
            if name not in known:
                register(name, factory)
        _builtins_done = True


def create_embedder(spec: EmbeddingSpec, env: Mapping[str, str] | None = None) -> Embedder | None:
    """The embedder ``spec`` asks for, or None for provider ``none`` (lexical only)."""
    register_builtins()
    factory = factory_for(spec.provider)
    if factory is None:
        import difflib  # for the error's suggestion only

        close = difflib.get_close_matches(spec.provider, providers(), n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise EmbeddingError(
            f"unknown embedding provider {spec.provider!r} — {hint}known providers: "
            + ", ".join(providers())
        )
    return factory(spec, dict(env or {}))
