"""The hashing fake, the query cache and the provider registry."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ep_mcp.errors import EmbeddingError
from ep_mcp.index.embed import (
    Embedder,
    EmbeddingSpec,
    HashingEmbedder,
    QueryEmbeddingCache,
    create_embedder,
    register,
)
from ep_mcp.index.embed.base import Matrix, providers
from ep_mcp.index.embed.local import LocalEmbedder
from ep_mcp.text import stem


def test_hashing_is_deterministic_across_instances() -> None:
    texts = ["Routing setup and ports", "Solar batteries", ""]
    first = HashingEmbedder(64).embed_documents(texts)
    second = HashingEmbedder(64).embed_documents(texts)
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(HashingEmbedder(64).embed_query(texts[0]), first[0])


@given(st.text(max_size=200), st.integers(min_value=2, max_value=300))
def test_hashing_rows_are_unit_float32(text: str, dimension: int) -> None:
    vector = HashingEmbedder(dimension).embed_query(text)
    assert vector.shape == (dimension,)
    assert vector.dtype == np.float32
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


def test_hashing_puts_shared_words_closer() -> None:
    embedder = HashingEmbedder(256)
    query = embedder.embed_query("configure the router ports")
    related, unrelated = embedder.embed_documents(
        ["Routers: configuring ports and firewall", "baking sourdough bread at home"]
    )
    assert float(query @ related) > float(query @ unrelated)


def test_hashing_names_itself_by_dimension() -> None:
    embedder = HashingEmbedder(32)
    assert isinstance(embedder, Embedder)
    assert embedder.name == "fake/hashing-32"
    assert embedder.dimension == 32
    assert embedder.embed_documents([]).shape == (0, 32)
    with pytest.raises(EmbeddingError):
        HashingEmbedder(1)


@pytest.mark.parametrize(
    ("word", "stemmed"),
    [("indexes", "index"), ("indexed", "index"), ("indexing", "index"), ("bus", "bus")],
)
def test_stemming_strips_common_suffixes(word: str, stemmed: str) -> None:
    assert stem(word) == stemmed


class CountingEmbedder:
    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.calls: list[str] = []

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> Matrix:
        self.calls.append(text)
        return self.inner.embed_query(text)


def test_the_query_cache_answers_repeats_from_memory() -> None:
    inner = CountingEmbedder(HashingEmbedder(16))
    cache = QueryEmbeddingCache(inner, maxsize=2)
    assert isinstance(cache, Embedder)
    first = cache.embed_query("a")
    again = cache.embed_query("a")
    assert again is first
    assert not again.flags.writeable
    assert inner.calls == ["a"]
    assert (cache.hits, cache.misses) == (1, 1)
    assert cache.key("a") == ("fake/hashing-16", 16, cache.key("a")[2])
    assert cache.embed_documents(["x"]).shape == (1, 16)


def test_the_query_cache_evicts_the_least_recently_used() -> None:
    inner = CountingEmbedder(HashingEmbedder(16))
    cache = QueryEmbeddingCache(inner, maxsize=2)
    for query in ["a", "b", "a", "c", "a", "b"]:
        cache.embed_query(query)
    assert inner.calls == ["a", "b", "c", "b"]  # b was evicted by c; a stayed warm
    assert len(cache) == 2
    cache.clear()
    assert len(cache) == 0


def test_the_query_cache_is_safe_across_threads() -> None:
    cache = QueryEmbeddingCache(HashingEmbedder(16), maxsize=8)
    errors: list[BaseException] = []

    def work(offset: int) -> None:
        try:
            for i in range(200):
                vector = cache.embed_query(f"q{(i + offset) % 20}")
                assert vector.shape == (16,)
        except BaseException as exc:  # reported below, not lost in the thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert not errors
    assert len(cache) <= 8
    assert cache.hits + cache.misses == 800


def test_none_means_lexical_only() -> None:
    assert create_embedder(EmbeddingSpec(provider="none"), {}) is None


def test_local_is_created_without_loading_the_model() -> None:
    embedder = create_embedder(EmbeddingSpec(), {})
    assert isinstance(embedder, LocalEmbedder)
    assert embedder.dimension == 384


def test_hashing_is_a_provider_too() -> None:
    embedder = create_embedder(EmbeddingSpec(provider="hashing", dimension=48), {})
    assert isinstance(embedder, HashingEmbedder)
    assert embedder.dimension == 48


def test_an_unknown_provider_lists_the_known_ones() -> None:
    with pytest.raises(EmbeddingError) as caught:
        create_embedder(EmbeddingSpec(provider="nope"), {})
    message = str(caught.value)
    assert "'nope'" in message
    for name in ("local", "none", "hashing", "openai", "azure-openai", "gemini", "voyage"):
        assert name in message


def test_a_registered_provider_is_used() -> None:
    register("test-registry-fake", lambda spec, env: HashingEmbedder(8))
    assert "test-registry-fake" in providers()
    embedder = create_embedder(EmbeddingSpec(provider="test-registry-fake"), {})
    assert isinstance(embedder, HashingEmbedder)
