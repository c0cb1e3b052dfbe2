"""Rate limiting: a token bucket per client address, 429 with Retry-After past it."""

from __future__ import annotations

from ep_mcp.serve.http.ratelimit import RateLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_client_gets_its_burst_then_waits_for_the_refill() -> None:
    clock = Clock()
    limiter = RateLimiter(60, burst=3, clock=clock)
    assert [limiter.wait_for("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.wait_for("a") == 1.0  # one token a second at 60/min
    assert limiter.wait_for("b") == 0.0  # another client has its own bucket
    clock.now = 1.0
    assert limiter.wait_for("a") == 0.0
