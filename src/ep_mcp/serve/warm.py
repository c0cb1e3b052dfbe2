"""The query model, loaded on a thread from the first moment of `serve`.

Loading the local model is native work (onnxruntime releases the GIL), so started before the
MCP SDK is imported and the packs are opened, it runs beside them instead of after them.
"""

from __future__ import annotations

import logging
import threading

from ep_mcp.config import Settings
from ep_mcp.errors import EpMcpError
from ep_mcp.index.embed.base import Embedder

logger = logging.getLogger(__name__)


def warm_up(embedder: Embedder) -> None:
    """Load the query model now, so the first client does not wait for it."""
    try:
        embedder.embed_query("warm up")
    except EpMcpError as exc:  # a dead provider degrades queries to lexical; say so once
        logger.warning("query embedding is unavailable (%s) — queries will be lexical", exc)


def warming(settings: Settings) -> Embedder | None:
    """The configured embedder, its model loading on a daemon thread."""
    from ep_mcp.index.embed.factory import make_embedder

    embedder = make_embedder(settings)
    if embedder is not None:
        threading.Thread(
            target=warm_up, args=(embedder,), name="ep-mcp-warm-up", daemon=True
        ).start()
    return embedder
