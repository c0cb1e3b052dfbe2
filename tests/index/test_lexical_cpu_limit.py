"""The lexical leg's time limit is the searching thread's CPU time: a machine busy with other
work slows the search down on the wall clock, but does not cut it short."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import apsw
import pytest

from ep_mcp.index import lexical

ROWS = 20_000
WEIGHTS = (1.0, 3.0, 2.0)
HOGS = 8  # busy processes on the one CPU the search may use


@pytest.fixture
def conn() -> apsw.Connection:
    c = apsw.Connection(":memory:")
    c.execute("CREATE VIRTUAL TABLE chunks_fts USING fts5(title, heading, body)")
    with c:
        c.executemany(
            "INSERT INTO chunks_fts(rowid, title, heading, body) VALUES (?, ?, ?, ?)",
            ((i, f"t{i}", f"h{i % 97}", f"solar word{i} " * (1 + i % 5)) for i in range(ROWS)),
        )
    return c


@pytest.fixture
def one_busy_cpu() -> Iterator[None]:
    """This process and ``HOGS`` spinning processes share one CPU, so a search gets a small
    share of it; restored after."""
    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("needs os.sched_setaffinity (Linux)")
    before = os.sched_getaffinity(0)
    cpu = min(before)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(HOGS)]
    try:
        for hog in hogs:
            os.sched_setaffinity(hog.pid, {cpu})
        os.sched_setaffinity(0, {cpu})
        yield
    finally:
        os.sched_setaffinity(0, before)
        for hog in hogs:
            hog.kill()
            hog.wait(timeout=10)


def test_a_busy_machine_does_not_cut_the_lexical_search_short(
    conn: apsw.Connection, one_busy_cpu: None
) -> None:
    # the limit: three times the CPU the whole search takes; the wall clock under the hogs is
    # several times the CPU, so a wall-clock limit cut it (the old behaviour)
    started = time.thread_time()
    full = lexical.top(conn, ["solar"], ROWS, WEIGHTS, 60_000)
    cpu_ms = (time.thread_time() - started) * 1000
    assert len(full) == ROWS
    limit_ms = max(5, int(cpu_ms * 3))
    for _ in range(3):
        assert lexical.top(conn, ["solar"], ROWS, WEIGHTS, limit_ms) == full


def test_a_search_past_its_cpu_limit_is_still_cut_short(conn: apsw.Connection) -> None:
    assert len(lexical.top(conn, ["solar"], ROWS, WEIGHTS, 0)) < ROWS
