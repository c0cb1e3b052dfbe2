"""A slow embedding provider costs a query at most its deadline; then the answer is lexical."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from ep_mcp.config.model import RetrievalSettings
from ep_mcp.index.builder import build_index
from ep_mcp.index.embed import HashingEmbedder, Matrix
from ep_mcp.index.store import Store
from ep_mcp.packs.loader import load_pack
from ep_mcp.retrieval import engine
from ep_mcp.retrieval.engine import SearchOptions
from ep_mcp.retrieval.source import LegExecutors, Uncached
from ep_mcp.retrieval.types import SearchRequest


class Stuck(HashingEmbedder):
    """Queries wait for ``release`` (bounded), like a provider that does not answer."""

    def __init__(self) -> None:
        super().__init__(16)
        self.release = threading.Event()

    def embed_query(self, text: str) -> Matrix:
        self.release.wait(timeout=10)
        return super().embed_query(text)

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        return super().embed_documents(texts)


@pytest.fixture
def executors() -> Iterator[LegExecutors]:
    threads = LegExecutors.start()
    yield threads
    threads.close()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[tuple[Store, Stuck]]:
    root = tmp_path / "pack"
    root.mkdir()
    (root / "kiln.md").write_text("# Kiln\n\nA kiln fires clay pots.\n", encoding="utf-8")
    s = Store(tmp_path / "i.db", vector_engine="numpy")
    embedder = Stuck()
    build_index(load_pack(root), s, embedder, lambda t: len(t.split()))
    yield s, embedder
    embedder.release.set()
    s.close()


def test_a_query_past_its_deadline_answers_lexically_with_a_note(
    store: tuple[Store, Stuck], executors: LegExecutors
) -> None:
    s, embedder = store
    result = engine.search(
        s,
        "p",
        SearchRequest("kiln clay"),
        RetrievalSettings(query_deadline_ms=50),
        Uncached(embedder),
        SearchOptions(deadline_ms=50, executors=executors),
    )
    assert result.mode == "lexical"
    assert result.hits[0].source_file == "kiln.md"
    assert result.notes == (
        "the embedding provider did not answer within 50 ms (retrieval.query_deadline_ms) "
        "— answered lexically",
    )


def test_a_query_within_its_deadline_is_hybrid(
    store: tuple[Store, Stuck], executors: LegExecutors
) -> None:
    s, embedder = store
    embedder.release.set()
    result = engine.search(
        s,
        "p",
        SearchRequest("kiln clay"),
        RetrievalSettings(),
        Uncached(embedder),
        SearchOptions(deadline_ms=10_000, executors=executors),
    )
    assert result.mode == "hybrid" and not result.notes
    assert np.isfinite(result.hits[0].score)
