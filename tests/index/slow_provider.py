"""Test-only embedding provider ``slow``: the hashing fake, with a pause to be killed in.

Importing this module registers the provider. When ``EP_MCP_TEST_PAUSE_MARKER`` names a file, the
second ``embed_documents`` call (so one batch is already in the embedding cache) creates that file
and then waits — long enough for a test to see the marker and kill the process mid-build.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

from ep_mcp.index.embed import HashingEmbedder, Matrix, register
from ep_mcp.index.embed.base import EmbeddingSpec

MARKER_ENV = "EP_MCP_TEST_PAUSE_MARKER"
PAUSE_S = 120.0


class SlowEmbedder(HashingEmbedder):
    def __init__(self, marker: str | None) -> None:
        super().__init__(64)
        self.marker = marker
        self.calls = 0

    @property
    def name(self) -> str:
        return "test/slow-hashing-64"

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        self.calls += 1
        if self.marker and self.calls == 2:
            Path(self.marker).write_text(str(os.getpid()), encoding="utf-8")
            time.sleep(PAUSE_S)  # the test kills us here
        return super().embed_documents(texts)


def _factory(spec: EmbeddingSpec, env: dict[str, str]) -> SlowEmbedder:
    # a registered provider is its own edge: ep-mcp's core hands it no environment
    return SlowEmbedder(os.environ.get(MARKER_ENV))


register("slow", _factory)
