"""The circuit breaker, on a fake clock: no sleeps."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from ep_mcp.errors import EmbeddingError, ProviderUnavailableError
from ep_mcp.index.embed import HashingEmbedder, Matrix, QueryEmbeddingCache
from ep_mcp.index.embed.breaker import (
    CircuitBreaker,
    GuardedEmbedder,
    accepts_calls,
    interactive,
    is_bounded,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Provider:
    """A fake provider that is up or down, counting the calls that reach it."""

    def __init__(self, label: str = "build") -> None:
        self.inner = HashingEmbedder(8)
        self.label = label
        self.down = False
        self.calls: list[str] = []

    @property
    def name(self) -> str:
        return "fake/provider"

    @property
    def dimension(self) -> int:
        return 8

    def _maybe_fail(self, what: str) -> None:
        self.calls.append(f"{self.label}:{what}")
        if self.down:
            raise EmbeddingError("fake embeddings at http://127.0.0.1:9 failed: HTTP 503")

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        self._maybe_fail("documents")
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> Matrix:
        self._maybe_fail("query")
        return self.inner.embed_query(text)


def fail(breaker: CircuitBreaker) -> None:
    def boom() -> None:
        raise EmbeddingError("HTTP 503")

    with pytest.raises(EmbeddingError):
        breaker.call(boom)


def test_the_circuit_opens_after_n_consecutive_failures_and_then_refuses_at_once() -> None:
    clock = Clock()
    breaker = CircuitBreaker(failures=3, cooldown_s=30, clock=clock)
    fail(breaker)
    fail(breaker)
    assert breaker.state == "closed"
    fail(breaker)
    assert breaker.state == "open"

    called: list[int] = []
    with pytest.raises(ProviderUnavailableError) as refused:
        breaker.call(lambda: called.append(1))
    assert called == []
    assert str(refused.value) == (
        "embedding provider unavailable (HTTP 503) — answering lexically; retrying in 30 s"
    )
    clock.now += 12.2
    assert breaker.retry_in() == pytest.approx(17.8)


def test_a_success_resets_the_count_of_failures() -> None:
    breaker = CircuitBreaker(failures=2, cooldown_s=5, clock=Clock())
    fail(breaker)
    assert breaker.call(lambda: "ok") == "ok"
    fail(breaker)
    assert breaker.state == "closed"


def test_after_the_cool_down_one_probe_goes_through_and_a_success_closes_the_circuit() -> None:
    clock = Clock()
    breaker = CircuitBreaker(failures=1, cooldown_s=30, clock=clock)
    fail(breaker)
    clock.now += 30
    assert breaker.state == "half-open"
    assert breaker.acquire()  # the probe
    assert not breaker.acquire()  # everyone else waits for its outcome
    breaker.succeeded()
    assert breaker.state == "closed"
    assert breaker.acquire() and breaker.acquire()


def test_a_failed_probe_opens_the_circuit_for_another_full_cool_down() -> None:
    clock = Clock()
    breaker = CircuitBreaker(failures=3, cooldown_s=30, clock=clock)
    for _ in range(3):
        fail(breaker)
    clock.now += 31
    fail(breaker)  # the probe
    assert breaker.state == "open"
    assert breaker.retry_in() == pytest.approx(30)


def test_an_interrupted_probe_frees_the_probe_slot_without_counting_a_failure() -> None:
    clock = Clock()
    breaker = CircuitBreaker(failures=1, cooldown_s=1, clock=clock)
    fail(breaker)
    clock.now += 2

    def interrupted() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        breaker.call(interrupted)
    assert breaker.acquire()


@pytest.mark.parametrize(("failures", "cooldown"), [(0, 30.0), (3, 0.0), (3, -1.0)])
def test_a_breaker_needs_sane_settings(failures: int, cooldown: float) -> None:
    with pytest.raises(ValueError):
        CircuitBreaker(failures, cooldown)


def test_queries_use_the_interactive_view_and_builds_the_provider_itself() -> None:
    build, view = Provider("build"), Provider("query")
    guarded = GuardedEmbedder(build, CircuitBreaker(3, 30, clock=Clock()), view)
    guarded.embed_documents(["a"])
    guarded.embed_query("b")
    interactive(QueryEmbeddingCache(guarded)).embed_documents(["c"])
    assert build.calls == ["build:documents"]
    assert view.calls == ["query:query", "query:documents"]
    assert is_bounded(QueryEmbeddingCache(guarded))
    assert not is_bounded(QueryEmbeddingCache(GuardedEmbedder(build, CircuitBreaker())))
    assert not is_bounded(HashingEmbedder(8)) and not is_bounded(None)


def test_builds_and_queries_share_one_breaker() -> None:
    clock = Clock()
    provider = Provider()
    guarded = QueryEmbeddingCache(GuardedEmbedder(provider, CircuitBreaker(2, 30, clock=clock)))
    provider.down = True
    with pytest.raises(EmbeddingError):
        guarded.embed_documents(["a"])
    with pytest.raises(EmbeddingError):
        guarded.embed_query("b")
    assert not accepts_calls(guarded)
    provider.calls.clear()
    with pytest.raises(ProviderUnavailableError):
        guarded.embed_documents(["a"])
    assert provider.calls == []

    provider.down = False
    clock.now += 30
    assert accepts_calls(guarded)
    assert np.allclose(np.linalg.norm(guarded.embed_query("c")), 1.0)
    assert guarded.embed_documents(["d"]).shape == (1, 8)
