"""The rerankers, and ``make_reranker``: the one way the runtime gets one.

Each kind is one outside service or model behind the ``Reranker`` protocol of
``retrieval.rerank``; ``make_reranker`` wraps it in the guard (cache, time budget, one error),
so a reranker that is slow, down or broken costs a query at most ``reranker.budget_ms`` and
leaves its order as it was.
"""

from __future__ import annotations

import functools

from ep_mcp.config.model import RerankerKind, RerankerSettings
from ep_mcp.errors import ConfigError
from ep_mcp.index.rerank.base import Scorer
from ep_mcp.index.rerank.guard import GuardedReranker

__all__ = ["GuardedReranker", "make_reranker"]


def _needed(value: object, key: str, kind: str) -> None:
    if value is None:  # config_checks says so first; settings built in code land here
        raise ConfigError(f"reranker.{key}: reranker.kind {kind} needs it")


def _inner(settings: RerankerSettings) -> Scorer:
    kind = RerankerKind(settings.kind)
    timeout_s = settings.budget_ms / 1000.0 + 1.0  # the guard's budget decides; this bounds
    if kind in (RerankerKind.HTTP, RerankerKind.CHAT):
        # optional: a reranker's module and its dependency load only when chosen
        from ep_mcp.index.rerank.http import ChatReranker, RerankApi

        _needed(settings.endpoint, "endpoint", kind)
        endpoint, key = str(settings.endpoint), settings.api_key
        if kind is RerankerKind.CHAT:
            return ChatReranker(endpoint, settings.model, key, timeout_s)
        return RerankApi(endpoint, settings.model, key, timeout_s, settings.api_style)
    if kind is RerankerKind.ONNX:
        # optional: a reranker's module and its dependency load only when chosen
        from ep_mcp.index.rerank.onnx import OnnxCrossEncoder

        _needed(settings.onnx_model, "onnx_model", kind)
        _needed(settings.tokenizer, "tokenizer", kind)
        assert settings.onnx_model is not None and settings.tokenizer is not None  # for mypy
        return OnnxCrossEncoder(settings.onnx_model, settings.tokenizer, settings.max_length)
    # optional: a reranker's module and its dependency load only when chosen
    from ep_mcp.index.rerank.sentence import CrossEncoderReranker

    return CrossEncoderReranker(settings.model)


@functools.lru_cache(maxsize=8)
def make_reranker(settings: RerankerSettings) -> GuardedReranker | None:
    """The configured reranker behind its guard (models load on first use), or None when off.
    One per settings in a process: every pack (and every artifact version swapped in) shares
    its model, its HTTP client and its score cache."""
    if not settings.enabled:
        return None
    return GuardedReranker(_inner(settings), settings.budget_ms)
