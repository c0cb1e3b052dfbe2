"""`ep-mcp bench index` on a tiny pack: the non-embedding build is measured on its own."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ep_mcp.bench.index import bench_index, render


def test_the_index_benchmark_times_the_build_without_the_model_apart(
    tmp_path: Path, make_pack: Callable[[dict[str, str]], Path]
) -> None:
    pack = make_pack(
        {f"note{i}.md": f"# Note {i}\n\n## Part\n\nSoil, water and light {i}.\n" for i in range(6)}
    )
    work = tmp_path / "work"
    work.mkdir()
    result = bench_index(pack, work, dict(os.environ), provider="hashing", runs=1)
    assert result["words_build_runs"] == 1
    assert result["words_build_cpu_s"] > 0 and result["words_build_s"] > 0
    assert 0 < result["words_build_in_process_cpu_s"] <= result["words_build_cpu_s"]
    assert 0 < result["words_build_in_process_s"] <= result["words_build_s"]
    assert "words only" in render(result) and "--provider none" in render(result)
    assert not any(p.name.startswith("words-index") for p in work.iterdir())  # cleaned up
