"""While serving, pending chunks are embedded in the background once the provider is back."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ep_mcp.config.model import PackSettings, Settings
from ep_mcp.index.embed import QueryEmbeddingCache, create_embedder
from ep_mcp.index.embed.base import EmbeddingSpec
from ep_mcp.index.embed.breaker import guard
from ep_mcp.library.backfill import Backfill
from ep_mcp.library.opening import open_library
from fake_provider import serve


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def test_backfill_waits_for_the_circuit_then_embeds_the_pending_chunks(
    make_pack: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    root = make_pack({"owl.md": "# Owls\n\nOwls hunt at night.\n"})
    with serve() as provider:
        spec = EmbeddingSpec(
            provider="openai", endpoint=provider.url, dimension=8, retries=0, breaker_failures=1
        )
        clock = Clock()
        inner = create_embedder(spec, {"OPENAI_API_KEY": "sk-test"})
        assert inner is not None
        embedder = QueryEmbeddingCache(guard(inner, 1, 30.0, clock=clock))
        settings = Settings(packs=(PackSettings(path=root),), embedding=spec, home=tmp_path)
        provider.down("503")
        lib = open_library(settings, tmp_path, embedder=embedder)
        try:
            rt = lib.get()
            assert rt.store.pending_count() == 1
            worker = Backfill(lib, interval_s=30.0)
            seen = len(provider.seen)
            provider.up()
            assert worker.run_once() == 0  # the circuit is open: the provider is not called
            assert len(provider.seen) == seen
            clock.now += 30
            assert worker.run_once() == 1  # the probe is the backfill itself
            assert rt.store.pending_count() == 0 and worker.filled == 1
            assert worker.run_once() == 0
        finally:
            lib.close()
