"""`ep-mcp bench scale` on a tiny synthetic index: every figure is there and plausible."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import psycopg

from ep_mcp.bench.scale import CLIENTS, render, scale_row
from ep_mcp.config.load import load_settings


def test_a_scale_row_measures_build_size_memory_and_latency(tmp_path: Path) -> None:
    settings = load_settings(data={})
    row = scale_row(tmp_path, 300, settings, queries=5, engines=("numpy",))
    assert row.chunks == 300 and not row.reused and row.file_mb > 0 and row.build_s > 0
    (numpy,) = row.engines
    assert numpy.engine == "numpy" and 0 < numpy.search_p50_ms <= numpy.search_p95_ms
    assert numpy.search_cpu_ms > 0 and numpy.qps > 0
    again = scale_row(tmp_path, 300, settings, queries=5, engines=("numpy",))
    assert again.reused
    assert "300" in render([row, again]) and "reused" in render([row, again])


def test_the_postgres_row_adds_qps_publish_and_the_flip_to_the_first_new_answer(
    tmp_path: Path, postgres_database: Callable[[], str]
) -> None:
    dsn = postgres_database()
    data = {"index": {"engine": "postgres", "dsn": dsn}, "server": {"artifact_poll_s": 0.05}}
    row = scale_row(tmp_path, 300, load_settings(data=data), queries=5, engines=("postgres",))
    (pg,) = row.engines
    assert pg.engine == "postgres" and pg.publish_s > 0 and pg.qps > 0
    assert pg.poll_s == 0.05 and pg.first_new_answer_s > 0
    with psycopg.connect(dsn) as conn:  # the second version was loaded and made current
        (current,) = conn.execute("SELECT version FROM ep_mcp.current").fetchone() or ("",)
        versions = conn.execute("SELECT count(*) FROM ep_mcp.versions").fetchone()
    assert current.endswith("-next") and versions == (2,)
    table = render([row])
    assert f"QPS@{CLIENTS}" in table and "new ans s" in table
