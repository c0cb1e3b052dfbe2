"""Progress: a bar on a terminal; off a terminal, log lines at the start, every ~10 s, the end."""

from __future__ import annotations

import io
import logging

import pytest

from ep_mcp.index.progress import LOG_EVERY_S, Progress


class Clock:
    now = 100.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_off_a_terminal_progress_logs_a_start_line_a_line_every_ten_seconds_and_an_end_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock, stream = Clock(), io.StringIO()
    with caplog.at_level(logging.INFO, logger="ep_mcp.progress"):
        p = Progress("embedding chunks", 300, stream=stream, clock=clock)
        for _ in range(3):
            clock.now += LOG_EVERY_S / 2
            p.advance(50)
        p.advance(150)
        p.close()
    lines = [r.getMessage() for r in caplog.records if r.name == "ep_mcp.progress"]
    assert lines[0] == "embedding chunks: 300 to do"
    assert lines[1].startswith("embedding chunks 100/300 · 10.0/s · ETA 20s")
    assert lines[-1] == "embedding chunks: 300/300 done in 15.0s"
    assert len(lines) == 3
    assert stream.getvalue() == ""  # no bar drawn where nobody sees it redraw


def test_on_a_terminal_the_bar_is_drawn_and_nothing_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stream = Terminal()
    with caplog.at_level(logging.INFO, logger="ep_mcp.progress"):
        p = Progress("embedding chunks", 2, stream=stream)
        p.advance(2)
        p.close()
    assert "embedding chunks 2/2" in stream.getvalue()
    assert not [r for r in caplog.records if r.name == "ep_mcp.progress"]


def test_progress_asked_off_is_silent_but_its_observer_still_hears_every_step(
    caplog: pytest.LogCaptureFixture,
) -> None:
    heard: list[tuple[int, int]] = []
    with caplog.at_level(logging.INFO, logger="ep_mcp.progress"):
        p = Progress(
            "x", 3, stream=io.StringIO(), enabled=False, observer=lambda d, t: heard.append((d, t))
        )
        p.advance(1)
        p.advance(2)
        p.close()
    assert heard == [(0, 3), (1, 3), (3, 3)]
    assert not caplog.records
