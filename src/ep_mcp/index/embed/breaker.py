"""A circuit breaker around an embedder: after repeated failures, stop calling it for a while.

``CircuitBreaker`` is the state machine (closed → open → half-open → closed or open again) over an
injectable clock; ``GuardedEmbedder`` wraps any :class:`Embedder` with one. While the breaker is
open every call fails at once with :class:`ProviderUnavailableError`, whose message says why and
when the provider is tried again — queries answer lexically without waiting, builds mark chunks
pending. After the cool-down one call goes through as a probe; its outcome closes or re-opens
the circuit.

Queries go through the embedder's *interactive* view when it has one (HTTP providers: one attempt
with ``embedding.query_timeout_s``), builds through the embedder itself (``timeout_s``, retries).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Literal, TypeVar

from ep_mcp.errors import EmbeddingError, ProviderUnavailableError
from ep_mcp.index.embed.base import Embedder, EmbedderWrapper, Matrix

logger = logging.getLogger(__name__)

State = Literal["closed", "open", "half-open"]
T = TypeVar("T")


class ModelLoadingError(ProviderUnavailableError):
    """The query model is still loading at start-up: this query is answered by its words."""


class CircuitBreaker:
    """Counts consecutive failures; ``failures`` in a row open the circuit for ``cooldown_s``.

    Thread-safe. In the half-open state exactly one caller is let through (the probe); the others
    are refused as if the circuit were still open, so a dead provider costs one waiting caller per
    cool-down, not one per caller.
    """

    def __init__(
        self,
        failures: int = 3,
        cooldown_s: float = 30.0,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if failures < 1:
            raise ValueError("failures must be at least 1")
        if not cooldown_s > 0:
            raise ValueError("cooldown_s must be above 0")
        self.failures = failures
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._lock = threading.Lock()
        self._consecutive = 0
        self._opened_at: float | None = None
        self._probing = False
        self.last_failure: str | None = None

    @property
    def state(self) -> State:
        with self._lock:
            return self._state()

    def _state(self) -> State:
        if self._opened_at is None:
            return "closed"
        if self._clock() - self._opened_at < self.cooldown_s:
            return "open"
        return "half-open"

    def retry_in(self) -> float:
        """Seconds until the next probe is allowed (0 when closed or half-open)."""
        with self._lock:
            if self._opened_at is None:
                return 0.0
            return max(0.0, self.cooldown_s - (self._clock() - self._opened_at))

    def acquire(self) -> bool:
        """May a call go through now? In half-open, True once (the probe) until it reports."""
        with self._lock:
            state = self._state()
            if state == "closed":
                return True
            if state == "half-open" and not self._probing:
                self._probing = True
                return True
            return False

    def succeeded(self) -> None:
        with self._lock:
            if self._opened_at is not None:
                logger.info("embedding provider answers again — circuit closed")
            self._consecutive = 0
            self._opened_at = None
            self._probing = False
            self.last_failure = None

    def failed(self, reason: str) -> None:
        with self._lock:
            self._consecutive += 1
            self.last_failure = reason
            was_probe, self._probing = self._probing, False
            if was_probe or self._consecutive >= self.failures:
                if self._opened_at is None or was_probe:
                    logger.warning(
                        "embedding provider failed %d time(s) in a row (%s) — circuit open, "
                        "answering lexically for %.0fs",
                        self._consecutive,
                        reason,
                        self.cooldown_s,
                    )
                self._opened_at = self._clock()

    def refusal(self) -> ProviderUnavailableError:
        """The error a refused call raises: the last failure and when the next probe is."""
        seconds = math.ceil(self.retry_in())
        return ProviderUnavailableError(
            f"embedding provider unavailable ({self.last_failure or 'it failed repeatedly'}) — "
            f"answering lexically; retrying in {seconds} s"
        )

    def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` through the breaker: refused while open, its outcome recorded."""
        if not self.acquire():
            raise self.refusal()
        try:
            result = fn()
        except EmbeddingError as exc:
            self.failed(str(exc))
            raise
        except BaseException:
            with self._lock:  # not the provider's fault (e.g. interrupted): free the probe slot
                self._probing = False
            raise
        self.succeeded()
        return result


class GuardedEmbedder(EmbedderWrapper):
    """An :class:`Embedder` whose calls pass through a :class:`CircuitBreaker`.

    ``interactive`` (optional) answers queries: for HTTP providers a view with one short attempt.
    """

    def __init__(
        self,
        embedder: Embedder,
        breaker: CircuitBreaker,
        interactive: Embedder | None = None,
    ) -> None:
        self.embedder = embedder
        self.breaker = breaker
        self._interactive = interactive or embedder

    @property
    def bounded(self) -> bool:
        """Whether queries use a separate, time-bounded view (an outside service)."""
        return self._interactive is not self.embedder

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        return self.breaker.call(lambda: self.embedder.embed_documents(texts))

    def embed_query(self, text: str) -> Matrix:
        return self.breaker.call(lambda: self._interactive.embed_query(text))

    def interactive(self) -> GuardedEmbedder:
        """The same embedder with query-time bounds for documents too (e.g. file profiles
        embedded while a query waits); shares this breaker."""
        return GuardedEmbedder(self._interactive, self.breaker)


def guard(
    embedder: Embedder,
    failures: int,
    cooldown_s: float,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> GuardedEmbedder:
    """Wrap ``embedder`` in a fresh breaker; HTTP providers answer queries interactively."""
    make_view = getattr(embedder, "interactive", None)
    view = make_view() if callable(make_view) else None
    return GuardedEmbedder(embedder, CircuitBreaker(failures, cooldown_s, clock=clock), view)


def interactive(embedder: Embedder) -> Embedder:
    """The query-time view of ``embedder`` (through a query cache), or ``embedder`` itself."""
    inner = getattr(embedder, "embedder", None)
    if isinstance(embedder, GuardedEmbedder):
        return embedder.interactive()
    if inner is not None and isinstance(inner, GuardedEmbedder):
        return inner.interactive()
    return embedder


def is_bounded(embedder: Embedder | None) -> bool:
    """Whether ``embedder`` (or the one a query cache wraps) calls an outside service."""
    while embedder is not None:
        if isinstance(embedder, GuardedEmbedder):
            return embedder.bounded
        embedder = getattr(embedder, "embedder", None)
    return False


def accepts_calls(embedder: Embedder | None) -> bool:
    """False while the breaker in front of ``embedder`` is open (a call would be refused)."""
    while embedder is not None:
        if isinstance(embedder, GuardedEmbedder):
            return embedder.breaker.state != "open"
        embedder = getattr(embedder, "embedder", None)
    return True
