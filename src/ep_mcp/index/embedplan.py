"""What a build embeds for each chunk: its embedding windows' texts, and the vectors back.

A chunk longer than the model's window is embedded as several windows (``windows.py``); each
window text is cached on its own (``cache_key``), and a chunk has its vector only when every
window has one. An embedder whose window is unknown (an HTTP provider) embeds chunks whole.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ep_mcp.config.model import IndexSettings
from ep_mcp.index.chunker import Chunk
from ep_mcp.index.embed.base import Embedder, windowed
from ep_mcp.index.windows import WindowSpec, joined, plan_windows

if TYPE_CHECKING:  # numpy is imported where vectors are touched (not by a restart's start)
    import numpy as np
    import numpy.typing as npt


def cache_key(embedder: Embedder, text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return f"{embedder.name}|{embedder.dimension}|{digest}"


def window_overlap(settings: IndexSettings) -> int | None:
    """The build's ``window_overlap`` from the settings (None: windows off)."""
    return settings.window_overlap if settings.embed_windows else None


def window_spec(embedder: Embedder | None, overlap: int | None) -> WindowSpec | None:
    """How long chunks are cut for this embedder (None: each chunk embedded whole — windows
    off, or an embedder whose window is unknown)."""
    model = windowed(embedder) if overlap is not None else None
    if model is None or overlap is None:
        return None
    return WindowSpec(model.window_tokens, overlap)


def plan(
    embedder: Embedder | None,
    spec: WindowSpec | None,
    items: Sequence[tuple[str, str]],
    count: Callable[[str], int],
) -> list[list[str]]:
    """The texts embedded for each (context prefix, span): its windows, or the chunk whole."""
    model = windowed(embedder)
    if spec is None or model is None:
        return [[joined(prefix, text)] for prefix, text in items]
    return plan_windows(items, count, model.token_spans, spec)


def chunk_vectors(
    embedder: Embedder, texts: Sequence[str], vectors: Mapping[str, npt.NDArray[np.float32]]
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32] | None] | None:
    """A chunk's (first vector, later windows' rows) from its window texts; None unless all
    are there."""
    rows = [vectors.get(cache_key(embedder, t)) for t in texts]
    if any(r is None for r in rows):
        return None
    first, *later = rows
    assert first is not None
    import numpy as np  # on use: a restart's start imports this module, not numpy

    return first, (np.stack(later) if later else None)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Plans:
    """The texts embedded for each pending chunk (in order) and each changed chunk."""

    waiting: list[list[str]]
    chunks: dict[tuple[str, int], list[str]]

    def chunk(self, c: Chunk) -> list[str]:
        return self.chunks.get((c.path, c.chunk_index)) or [c.indexed_text]

    def texts(self) -> list[str]:
        return [t for ts in self.waiting for t in ts] + [
            t for ts in self.chunks.values() for t in ts
        ]


def embedding_plans(
    embedder: Embedder | None,
    spec: WindowSpec | None,
    waiting: Sequence[tuple[int, str, str]],
    chunks: Sequence[Chunk],
    count: Callable[[str], int],
) -> Plans:
    if embedder is None:
        return Plans([], {})
    planned = plan(
        embedder,
        spec,
        [(p, t) for _, p, t in waiting] + [(c.context_prefix, c.text) for c in chunks],
        count,
    )
    keys = [(c.path, c.chunk_index) for c in chunks]
    return Plans(planned[: len(waiting)], dict(zip(keys, planned[len(waiting) :], strict=True)))
