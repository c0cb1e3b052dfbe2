"""A provider that fails during an incremental build costs no stored vector (SPEC T19).

For each of the eleven fault modes, against a real HTTP server on 127.0.0.1: the build commits
lexically and keeps every vector of the unchanged files, changed chunks wait as pending; queries
answer lexically, labelled, within the deadline while the provider is down; once it is back the
queries are hybrid again and the next build embeds what was pending.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ep_mcp.config.model import PackSettings, Settings
from ep_mcp.index.embed import QueryEmbeddingCache, create_embedder
from ep_mcp.index.embed.base import EmbeddingSpec
from ep_mcp.index.embed.breaker import guard
from ep_mcp.library.opening import open_library
from ep_mcp.library.runtime import Library, PackRuntime
from ep_mcp.retrieval.types import SearchRequest
from fake_provider import FAULTS, FakeProvider, serve

KEY = "sk-canary-7c1e0f9d"
PACK = {
    "volcanoes.md": "# Volcanoes\n\nMagma rises through the crust and erupts as lava.\n\n"
    "## Ash\n\nAsh clouds ground aircraft for days.\n",
    "bread.md": "# Bread\n\nSourdough needs a lively starter and a long proof.\n",
    "tides.md": "# Tides\n\nThe moon pulls the oceans into two bulges.\n",
}


WHY = {  # what the build's warning says for each fault
    "429": "HTTP 429",
    "500": "HTTP 500",
    "503": "HTTP 503",
    "refused": "could not connect",
    "hang": "timed out after 0.5s",
    "reset": "the connection failed",
    "garbage": "not JSON",
    "dimension": "returned 5-dimensional vectors, expected 8",
    "nan": "non-finite vector",
    "fewer": "returned 1 vectors for 2 texts",
    "401": "HTTP 401",
}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    with serve() as fake:
        yield fake


def spec_for(url: str) -> EmbeddingSpec:
    # one short attempt while indexing keeps the test quick (retries are tested elsewhere);
    # queries keep the shipped bounds (query_timeout_s 1.5, query_deadline_ms 2000)
    return EmbeddingSpec(provider="openai", endpoint=url, dimension=8, timeout_s=0.5, retries=0)


@contextmanager
def library(root: Path, home: Path, url: str, clock: Clock) -> Iterator[Library]:
    spec = spec_for(url)
    settings = Settings(packs=(PackSettings(path=root),), embedding=spec, home=home)
    inner = create_embedder(spec, {"OPENAI_API_KEY": KEY})
    assert inner is not None
    embedder = QueryEmbeddingCache(
        guard(inner, spec.breaker_failures, spec.breaker_cooldown_s, clock=clock)
    )
    lib = open_library(settings, home, embedder=embedder)
    try:
        yield lib
    finally:
        lib.close()


def vectors_of(rt: PackRuntime, path: str) -> dict[int, np.ndarray]:
    ids = [c.id for c in rt.store.chunks_for_path(path)]
    return rt.store.vectors_for(ids)


def counted_search(rt: PackRuntime, provider: FakeProvider, query: str) -> tuple[int, Any]:
    """(requests the query sent to the provider, its result)."""
    before = len(provider.seen)
    result = rt.search(SearchRequest(query=query, k=5))
    return len(provider.seen) - before, result


@pytest.mark.parametrize("fault", FAULTS)
def test_a_provider_fault_during_an_incremental_build_keeps_every_stored_vector(
    fault: str,
    provider: FakeProvider,
    make_pack: Callable[[dict[str, str]], Path],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="ep_mcp")
    root = make_pack(PACK)
    clock = Clock()
    with library(root, tmp_path / "home", provider.url, clock) as lib:
        rt = lib.get()
        kept = vectors_of(rt, "volcanoes.md")
        assert len(kept) == 1 and rt.store.pending_count() == 0
        features = rt.store.features()

        provider.down(fault)
        (root / "bread.md").write_text(
            "# Bread\n\nRye bread keeps for a week in a cloth.\n", encoding="utf-8"
        )
        (root / "moss.md").write_text("# Moss\n\nMoss grows on the north side.\n", "utf-8")
        report = rt.index()

        # the build committed lexically and kept every vector it had
        assert report.changed == 2
        assert report.pending == 2 and rt.store.pending_count() == 2
        assert report.embedding_error and WHY[fault] in report.embedding_error
        assert KEY not in report.embedding_error
        assert rt.store.features() == features  # the embedder stays: no lexical-only rebuild
        after = vectors_of(rt, "volcanoes.md")
        assert after.keys() == kept.keys()
        for cid, vec in kept.items():
            np.testing.assert_array_equal(after[cid], vec)
        assert len(vectors_of(rt, "tides.md")) == 1
        assert vectors_of(rt, "bread.md") == {} and vectors_of(rt, "moss.md") == {}

        # provider still down: every query answers lexically at once, and says why
        # (counts, not the wall clock: a hanging request answers with vectors only after
        # HANG_S, so a query that waited it out would come back hybrid; and the breaker opens,
        # so the last queries send nothing at all)
        sent = []
        for query in ("magma eruption", "rye bread cloth", "moon oceans", "moss north"):
            calls, result = counted_search(rt, provider, query)
            sent.append(calls)
            assert result.mode == "lexical", (fault, result.notes)
            assert result.hits, (fault, query)
            notes = " ".join(result.notes)
            assert "lexically" in notes and "2 chunk(s) await embeddings" in notes
            assert KEY not in notes
        assert sum(sent) < spec_for(provider.url).breaker_failures and sent[-2:] == [0, 0], sent
        assert rt.search(SearchRequest("rye bread")).hits[0].source_file == "bread.md"

        # the provider is back (and the cool-down over): hybrid again for the unchanged files
        provider.up()
        clock.now += 31
        result = rt.search(SearchRequest(query="lava crust aircraft", k=5))
        assert result.mode == "hybrid", (fault, result.notes)
        assert result.hits[0].source_file == "volcanoes.md"
        assert any("await embeddings" in n for n in result.notes)

        # the next build embeds what was pending, and nothing invalid was ever stored
        again = rt.index()
        assert again.pending == 0 and rt.store.pending_count() == 0
        assert again.embedded == 2 and again.changed == 0
        assert rt.store.counts()["vectors"] == rt.store.counts()["chunks"] == 4
        every = rt.store.vectors_for(
            [c.id for p in [*sorted(PACK), "moss.md"] for c in rt.store.chunks_for_path(p)]
        )
        for vec in every.values():
            assert vec.shape == (8,) and np.all(np.isfinite(vec))
        assert not rt.search(SearchRequest(query="moss north side")).notes
    for record in caplog.records:
        assert KEY not in record.getMessage()
