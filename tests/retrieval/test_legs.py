"""The two legs over a fake source: what each asks of the index, and notes when embedding fails."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from typing import Any

import numpy as np
import pytest

from ep_mcp.config.model import RetrievalSettings
from ep_mcp.errors import EmbeddingError, ProviderUnavailableError
from ep_mcp.index.embed.cache import QueryEmbeddingCache
from ep_mcp.index.embed.fake import HashingEmbedder
from ep_mcp.retrieval.legs import LegChoice, run_legs
from ep_mcp.retrieval.source import LegExecutors, Uncached, query_embedding
from ep_mcp.retrieval.types import SearchRequest

SETTINGS = RetrievalSettings(
    text_column_weight=1.5, title_weight=4.0, heading_weight=2.5, lexical_time_limit_ms=77
)
QVEC = np.array([1.0, 0.0], dtype=np.float32)


class FakeSource:
    """Answers the legs from fixed lists and records what it was asked."""

    def __init__(self, vectors: bool = True, dense: list[tuple[int, float]] | None = None) -> None:
        self.vectors = vectors
        self.dense = [(2, 0.9)] if dense is None else dense
        self.lexical_calls: list[dict[str, Any]] = []
        self.vector_calls: list[tuple[list[float], int]] = []
        self.lexical_thread = ""

    def lexical_top(
        self,
        terms: Sequence[str],
        n: int,
        *,
        weights: tuple[float, float, float],
        time_limit_ms: int,
    ) -> list[tuple[int, float]]:
        self.lexical_thread = threading.current_thread().name
        self.lexical_calls.append(
            {"terms": tuple(terms), "n": n, "weights": weights, "limit": time_limit_ms}
        )
        return [(1, 3.0)]

    def has_vectors(self) -> bool:
        return self.vectors

    def vector_top(self, query: Any, n: int) -> list[tuple[int, float]]:
        self.vector_calls.append((list(query), n))
        return self.dense


class Embedder:
    def __init__(self, error: EmbeddingError | None = None, cached: tuple[str, ...] = ()) -> None:
        self.error = error
        self.cached = cached  # the texts whose embedding is already paid for
        self.asked: list[str] = []

    def embed_query(self, text: str) -> Any:
        self.asked.append(text)
        if self.error is not None:
            raise self.error
        return QVEC

    def is_cached(self, text: str) -> bool:
        return text in self.cached


@pytest.fixture
def executors() -> Iterator[LegExecutors]:
    threads = LegExecutors.start()
    yield threads
    threads.close()


def test_the_lexical_leg_asks_for_the_query_terms_with_the_column_weights_and_time_limit() -> None:
    source = FakeSource()
    legs = run_legs(source, SearchRequest("How to size the battery?"), SETTINGS, Embedder(), 40)  # type: ignore[arg-type]
    assert source.lexical_calls == [
        {"terms": ("size", "battery"), "n": 40, "weights": (1.5, 4.0, 2.5), "limit": 77}
    ]
    assert legs.terms == ("size", "battery")
    assert source.vector_calls == [([1.0, 0.0], 40)]
    assert (legs.lexical, legs.dense, legs.notes) == ([(1, 3.0)], [(2, 0.9)], ())
    assert legs.query_vector is QVEC


@pytest.mark.parametrize(
    ("choice", "lexical", "dense"),
    [("both", [(1, 3.0)], [(2, 0.9)]), ("lexical", [(1, 3.0)], []), ("vector", [], [(2, 0.9)])],
)
def test_one_leg_can_run_alone(choice: LegChoice, lexical: list[Any], dense: list[Any]) -> None:
    source, embedder = FakeSource(), Embedder()
    legs = run_legs(source, SearchRequest("battery"), SETTINGS, embedder, 10, choice=choice)  # type: ignore[arg-type]
    assert (legs.lexical, legs.dense) == (lexical, dense)
    assert embedder.asked == ([] if choice == "lexical" else ["battery"])


def test_a_callers_vector_is_used_as_is_and_nothing_is_embedded() -> None:
    source, embedder = FakeSource(), Embedder()
    request = SearchRequest("battery", vector=(0.0, 1.0))
    legs = run_legs(source, request, SETTINGS, embedder, 10)  # type: ignore[arg-type]
    assert embedder.asked == []
    assert source.vector_calls == [([0.0, 1.0], 10)]
    assert legs.lexical == [(1, 3.0)]
    assert legs.query_vector is not None and legs.query_vector.dtype == np.float32
    lexical_only = run_legs(source, request, SETTINGS, embedder, 10, choice="lexical")  # type: ignore[arg-type]
    assert (lexical_only.dense, lexical_only.query_vector) == ([], None)


def test_an_index_without_vectors_or_no_embedder_answers_lexically() -> None:
    embedder = Embedder()
    legs = run_legs(FakeSource(vectors=False), SearchRequest("x"), SETTINGS, embedder, 10)  # type: ignore[arg-type]
    assert (legs.dense, legs.query_vector, embedder.asked) == ([], None, [])
    legs = run_legs(FakeSource(), SearchRequest("x"), SETTINGS, None, 10)  # type: ignore[arg-type]
    assert (legs.dense, legs.query_vector) == ([], None)


def test_no_query_vector_is_kept_when_the_dense_leg_found_nothing() -> None:
    legs = run_legs(FakeSource(dense=[]), SearchRequest("x"), SETTINGS, Embedder(), 10)  # type: ignore[arg-type]
    assert legs.query_vector is None


def test_a_failed_embedding_answers_lexically_and_says_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    embedder = Embedder(error=EmbeddingError("HTTP 500 from the provider"))
    with caplog.at_level(logging.INFO, logger="ep_mcp.retrieval.legs"):
        legs = run_legs(FakeSource(), SearchRequest("x"), SETTINGS, embedder, 10)  # type: ignore[arg-type]
    assert legs.lexical == [(1, 3.0)] and legs.dense == []
    assert legs.notes == ("embedding failed, answered lexically: HTTP 500 from the provider",)
    assert [
        (r.levelname, r.getMessage()) for r in caplog.records if r.name == "ep_mcp.retrieval.legs"
    ] == [("WARNING", "query embedding failed (HTTP 500 from the provider) — lexical only")]


def test_an_open_circuit_says_what_the_breaker_says(caplog: pytest.LogCaptureFixture) -> None:
    why = "the embedding provider failed 3 times — lexical answers for 30 s"
    embedder = Embedder(error=ProviderUnavailableError(why))
    with caplog.at_level(logging.INFO, logger="ep_mcp.retrieval.legs"):
        legs = run_legs(FakeSource(), SearchRequest("x"), SETTINGS, embedder, 10)  # type: ignore[arg-type]
    assert legs.notes == (why,)
    assert [
        (r.levelname, r.getMessage()) for r in caplog.records if r.name == "ep_mcp.retrieval.legs"
    ] == [("INFO", f"query embedding skipped: {why}")]


def test_with_threads_and_no_deadline_the_lexical_leg_runs_beside_the_embedding(
    executors: LegExecutors,
) -> None:
    source, embedder = FakeSource(), Embedder()
    legs = run_legs(source, SearchRequest("x"), SETTINGS, Uncached(embedder), 10, None, executors)  # type: ignore[arg-type]
    assert source.lexical_thread.startswith("ep-lexical")
    assert (legs.lexical, legs.dense) == ([(1, 3.0)], [(2, 0.9)])


def test_with_threads_a_failed_embedding_still_waits_for_the_lexical_leg(
    executors: LegExecutors,
) -> None:
    source, embedder = FakeSource(), Embedder(error=EmbeddingError("boom"))
    legs = run_legs(source, SearchRequest("x"), SETTINGS, embedder, 10, None, executors)  # type: ignore[arg-type]
    assert legs.lexical == [(1, 3.0)]
    assert legs.notes == ("embedding failed, answered lexically: boom",)


def test_a_cached_query_embedding_runs_on_the_callers_thread(executors: LegExecutors) -> None:
    source, embedder = FakeSource(), Embedder(cached=("x",))
    legs = run_legs(source, SearchRequest("x"), SETTINGS, embedder, 10, None, executors)  # type: ignore[arg-type]
    assert source.lexical_thread == threading.current_thread().name
    assert legs.dense == [(2, 0.9)]
    other = FakeSource()
    run_legs(other, SearchRequest("y"), SETTINGS, embedder, 10, None, executors)  # type: ignore[arg-type]
    assert other.lexical_thread.startswith("ep-lexical")  # "y" is not cached


def test_with_a_deadline_an_embedding_error_answers_lexically_and_says_why(
    executors: LegExecutors,
) -> None:
    embedder = Embedder(error=EmbeddingError("bad key"))
    legs = run_legs(FakeSource(), SearchRequest("x"), SETTINGS, embedder, 10, 1e12, executors)  # type: ignore[arg-type]
    assert legs.notes == ("embedding failed, answered lexically: bad key",)
    assert legs.dense == []


def test_with_a_deadline_in_time_the_answer_is_hybrid(executors: LegExecutors) -> None:
    source = FakeSource()
    legs = run_legs(source, SearchRequest("x"), SETTINGS, Embedder(), 10, 1e12, executors)  # type: ignore[arg-type]
    assert source.lexical_thread == threading.current_thread().name  # the embedding is away
    assert legs.dense == [(2, 0.9)] and legs.notes == ()


def test_an_uncached_embedding_is_always_computed() -> None:
    embedder = Embedder(cached=("x",))
    query = Uncached(embedder)  # type: ignore[arg-type]
    assert not query.is_cached("x")
    assert query.embed_query("x") is QVEC and embedder.asked == ["x"]


def test_the_threads_are_named_for_what_they_run(executors: LegExecutors) -> None:
    assert executors.packs is not None
    names = [
        pool.submit(lambda: threading.current_thread().name).result(timeout=10)
        for pool in (executors.lexical, executors.embedding, executors.packs)
    ]
    assert [n.rsplit("_", 1)[0] for n in names] == ["ep-lexical", "ep-embed", "ep-packs"]


@pytest.mark.parametrize(("pool", "workers"), [("lexical", 4), ("embedding", 8), ("packs", 8)])
def test_closing_returns_at_once_and_cancels_what_has_not_started(pool: str, workers: int) -> None:
    executors = LegExecutors.start()
    release = threading.Event()
    started = threading.Semaphore(0)
    safety = threading.Timer(10, release.set)  # a broken close() still ends the test
    safety.start()

    def block() -> None:
        started.release()
        release.wait(timeout=10)

    try:
        running = [getattr(executors, pool).submit(block) for _ in range(workers)]
        for _ in range(workers):
            assert started.acquire(timeout=10)
        queued: Future[None] = getattr(executors, pool).submit(block)
        executors.close()
        assert not any(f.done() for f in running)  # close() did not wait for them
        assert queued.cancelled()
    finally:
        release.set()
        safety.cancel()


def test_a_missed_deadline_is_logged_with_its_budget(
    executors: LegExecutors, caplog: pytest.LogCaptureFixture
) -> None:
    release = threading.Event()

    class Slow(Embedder):
        def embed_query(self, text: str) -> Any:
            release.wait(timeout=10)
            return QVEC

    settings = RetrievalSettings(query_deadline_ms=40)
    try:
        with caplog.at_level(logging.WARNING, logger="ep_mcp.retrieval.legs"):
            legs = run_legs(FakeSource(), SearchRequest("x"), settings, Slow(), 10, 0.0, executors)  # type: ignore[arg-type]
    finally:
        release.set()
    assert legs.dense == []
    assert legs.notes == (
        "the embedding provider did not answer within 40 ms (retrieval.query_deadline_ms) "
        "— answered lexically",
    )
    assert [r.getMessage() for r in caplog.records if r.name == "ep_mcp.retrieval.legs"] == [
        "query embedding missed the 40 ms deadline — lexical only"
    ]


def test_a_query_cache_is_asked_what_it_holds_and_a_bare_embedder_is_wrapped_uncached() -> None:
    cache = QueryEmbeddingCache(HashingEmbedder(16))
    assert query_embedding(cache) is cache
    bare = HashingEmbedder(16)
    wrapped = query_embedding(bare)
    assert isinstance(wrapped, Uncached) and wrapped.embedder is bare
    assert query_embedding(wrapped) is wrapped
    assert query_embedding(None) is None


def test_whether_an_embedder_says_what_is_cached_is_asked_of_its_class_once() -> None:
    asked: list[str] = []

    class Spying(type):
        def __getattribute__(cls, name: str) -> Any:
            if name in ("embed_query", "is_cached"):
                asked.append(name)
            return super().__getattribute__(name)

    class Counted(QueryEmbeddingCache, metaclass=Spying):
        pass

    caches = [Counted(HashingEmbedder(16)) for _ in range(3)]
    assert [query_embedding(c) for c in caches] == caches
    assert asked == ["embed_query", "is_cached"]  # the first search's; none per later search
