"""Progress: a bar on a terminal; off a terminal, log lines at the start, every ~10 s, the end."""

from __future__ import annotations

import io
import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from ep_mcp.index.builder import build_index
from ep_mcp.index.buildstate import BuildCancelled, BuildState
from ep_mcp.index.embed import HashingEmbedder
from ep_mcp.index.progress import LOG_EVERY_S, Progress
from ep_mcp.index.store import Store
from ep_mcp.packs.loader import load_pack


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
    assert lines[1] == "embedding chunks 100/300 · 10.0/s · ETA estimating"  # 2 steps: too few
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


def test_an_embedding_run_cancelled_at_shutdown_logs_where_it_stopped_never_done(
    make_pack: Callable[[dict[str, str]], Path],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    root = make_pack({f"n{i:03}.md": f"# Note {i}\n\nWord{i} stands alone.\n" for i in range(70)})
    state = BuildState()

    def observe(done: int, total: int) -> None:
        if done:  # the first batch is in: the server starts stopping
            state.cancel()
        state.observe(done, total)

    store = Store(tmp_path / "i.db", vector_engine="numpy")
    with (
        caplog.at_level(logging.INFO, logger="ep_mcp.progress"),
        state.running(),
        pytest.raises(BuildCancelled),
    ):
        build_index(load_pack(root), store, HashingEmbedder(16), len, observer=observe)
    lines = [r.getMessage() for r in caplog.records if r.name == "ep_mcp.progress"]
    assert lines[0] == "embedding chunks: 70 to do"
    assert lines[-1].startswith("embedding chunks: stopped at 64/70 after ")
    assert lines[-1].endswith("— the server is stopping")
    assert not [line for line in lines if "done" in line]
    assert store.counts()["cached"] == 64  # kept for the next run


def test_the_time_left_waits_for_a_few_batches_leaves_out_the_start_and_counts_down() -> None:
    """The first batch also paid for loading the model: it does not set the pace. No time
    left is said before three batches; between batches it counts down instead of jumping."""
    clock = Clock()
    state = BuildState(clock=clock)
    with state.running():
        state.observe(0, 100)
        clock.now += 30.0  # the model loads during the first batch
        state.observe(10, 100)
        assert state.snapshot(100, 100, True)["progress"]["eta_s"] is None
        clock.now += 1.0
        state.observe(20, 100)
        assert state.snapshot(100, 100, True)["progress"]["eta_s"] is None
        clock.now += 1.0
        state.observe(30, 100)
        assert state.snapshot(100, 100, True)["progress"]["eta_s"] == 7.0  # 70 at 0.1 s each
        clock.now += 2.0
        assert state.snapshot(100, 100, True)["progress"]["eta_s"] == 5.0
        clock.now += 3.0  # one slow batch (5 s for 10) moves it, but not to its own pace
        state.observe(40, 100)
        assert state.snapshot(100, 100, True)["progress"]["eta_s"] == 13.2  # not 60 x 0.5 s
