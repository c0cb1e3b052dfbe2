"""A token bucket per client address: `per_minute` requests, refilled continuously."""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

MAX_CLIENTS = 10_000  # the least recently seen client's bucket is forgotten past this


class RateLimiter:
    def __init__(
        self, per_minute: int, burst: int | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = per_minute / 60.0
        self.burst = float(burst or per_minute)
        self.clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def wait_for(self, client: str) -> float:
        """0 when this request may go ahead (and is counted), else seconds until it may."""
        now = self.clock()
        with self._lock:
            tokens, seen = self._buckets.pop(client, (self.burst, now))
            tokens = min(self.burst, tokens + (now - seen) * self.rate)
            wait = 0.0
            if tokens >= 1.0:
                tokens -= 1.0
            else:
                wait = (1.0 - tokens) / self.rate
            self._buckets[client] = (tokens, now)
            while len(self._buckets) > MAX_CLIENTS:
                self._buckets.popitem(last=False)
        return wait

    @staticmethod
    def retry_after(wait: float) -> str:
        return str(max(1, math.ceil(wait)))
