"""`ep-mcp bench scale` on a tiny synthetic index: every figure is there and plausible."""

from __future__ import annotations

from pathlib import Path

from ep_mcp.bench.scale import render, scale_row
from ep_mcp.config import load_settings


def test_a_scale_row_measures_build_size_memory_and_latency(tmp_path: Path) -> None:
    settings = load_settings(data={})
    row = scale_row(tmp_path, 300, settings, queries=5, engines=("numpy",))
    assert row.chunks == 300 and not row.reused and row.file_mb > 0 and row.build_s > 0
    (numpy,) = row.engines
    assert numpy.engine == "numpy" and 0 < numpy.search_p50_ms <= numpy.search_p95_ms
    assert numpy.search_cpu_ms > 0
    again = scale_row(tmp_path, 300, settings, queries=5, engines=("numpy",))
    assert again.reused
    assert "300" in render([row, again]) and "reused" in render([row, again])
