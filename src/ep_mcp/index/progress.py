"""Progress on stderr for long work: count, rate and ETA, only when stderr is a terminal."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    def __init__(
        self, label: str, total: int, stream: TextIO | None = None, enabled: bool | None = None
    ):
        self.label = label
        self.total = total
        self.done = 0
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self._start = time.monotonic()
        self._last = 0.0

    def advance(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if self.enabled and (now - self._last > 0.2 or self.done >= self.total):
            self._last = now
            self.stream.write("\r" + self.line() + "\033[K")
            self.stream.flush()

    def line(self) -> str:
        elapsed = max(time.monotonic() - self._start, 1e-6)
        rate = self.done / elapsed
        left = (self.total - self.done) / rate if rate > 0 else 0.0
        return f"{self.label} {self.done}/{self.total} · {rate:.1f}/s · ETA {left:.0f}s"

    def close(self) -> None:
        if self.enabled and self.total:
            self.stream.write("\n")
            self.stream.flush()
