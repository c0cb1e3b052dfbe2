"""Progress of long work (count, rate, ETA): a bar on a terminal, log lines everywhere else.

On a terminal the bar redraws in place on stderr. Under a desktop host, systemd or CI (stderr
not a terminal) the same progress goes to the ``ep_mcp.progress`` logger instead — one line
at the start, one every ``LOG_EVERY_S`` seconds and one at the end — so a long build is never
silent. Log records go wherever logging is configured (the CLI: stderr, never stdout).
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from typing import TextIO

logger = logging.getLogger("ep_mcp.progress")

LOG_EVERY_S = 10.0  # seconds between progress log lines when stderr is not a terminal

Observer = Callable[[int, int], None]  # told (done, total) after every step

MIN_STEPS = 3  # no time-left is shown before this many steps (batches) are done
SMOOTHING = 0.3  # weight of the newest step in the smoothed seconds per item


class TimeLeft:
    """A steady time-left estimate: seconds per item smoothed over the steps (an EWMA; the
    first step, which pays the start-up, is left out), counting down between steps. None
    before ``MIN_STEPS`` steps: a guess from one batch jumps."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.reset()

    def reset(self) -> None:
        self._at, self._done, self._steps = self._clock(), 0, 0
        self._per_item: float | None = None

    def step(self, done: int) -> None:
        """``done`` items are done now (told after each step)."""
        now = self._clock()
        items = done - self._done
        if items <= 0:
            return
        if self._steps:  # the first step also paid for the start (the model load)
            sample = max(now - self._at, 0.0) / items
            old = self._per_item
            self._per_item = sample if old is None else SMOOTHING * sample + (1 - SMOOTHING) * old
        self._at, self._done, self._steps = now, done, self._steps + 1

    def seconds(self, total: int) -> float | None:
        """Seconds left for ``total`` items, or None while too few steps are done."""
        if self._steps < MIN_STEPS or self._per_item is None:
            return None
        at_last_step = (total - self._done) * self._per_item
        return max(0.0, at_last_step - (self._clock() - self._at))


class Progress:
    """``enabled``: True draws the bar, False is silent, None picks (bar on a terminal, else
    log lines). ``observer`` hears (done, total) after every step whatever is shown."""

    def __init__(
        self,
        label: str,
        total: int,
        stream: TextIO | None = None,
        enabled: bool | None = None,
        *,
        observer: Observer | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.label = label
        self.total = total
        self.done = 0
        self.stream = stream or sys.stderr
        tty = _isatty(self.stream)
        self.enabled = tty if enabled is None else enabled  # the bar
        self.logs = enabled is None and not tty and total > 0
        self.observer = observer
        self._clock = clock
        self._left = TimeLeft(clock)
        self._start = clock()
        self._last = 0.0
        self._logged = self._start
        if self.logs:
            logger.info("%s: %d to do", self.label, self.total)
        if observer is not None:
            observer(0, total)

    def advance(self, n: int = 1) -> None:
        self.done += n
        now = self._clock()
        self._left.step(self.done)
        if self.observer is not None:
            self.observer(self.done, self.total)
        if self.enabled and (now - self._last > 0.2 or self.done >= self.total):
            self._last = now
            self.stream.write("\r" + self.line() + "\033[K")
            self.stream.flush()
        if self.logs and now - self._logged >= LOG_EVERY_S and self.done < self.total:
            self._logged = now
            logger.info("%s", self.line())

    def line(self) -> str:
        elapsed = max(self._clock() - self._start, 1e-6)
        rate = self.done / elapsed
        left = self._left.seconds(self.total)
        eta = "ETA estimating" if left is None else f"ETA {left:.0f}s"
        return f"{self.label} {self.done}/{self.total} · {rate:.1f}/s · {eta}"

    def eta_s(self) -> float | None:
        """Seconds left (smoothed: `TimeLeft`); None before ``MIN_STEPS`` steps."""
        return self._left.seconds(self.total)

    def close(self, stopped: BaseException | None = None) -> None:
        """End the bar or log the last line; ``stopped``: why the work ended early (a
        cancelled or failed run is never reported done)."""
        if self.enabled and self.total:
            self.stream.write("\n")
            self.stream.flush()
        if self.logs:
            elapsed = self._clock() - self._start
            if stopped is None:
                logger.info("%s: %d/%d done in %.1fs", self.label, self.done, self.total, elapsed)
            else:
                why = str(stopped) or type(stopped).__name__
                logger.info(
                    "%s: stopped at %d/%d after %.1fs — %s",
                    self.label,
                    self.done,
                    self.total,
                    elapsed,
                    why,
                )


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream: not a terminal
        return False
