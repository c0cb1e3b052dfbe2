"""``bench query`` says what a query cost in CPU as well as in wall time (a shared machine's
wall clock drifts), and times the model alone on one query, what the cold query is held to."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ep_mcp.bench.query import Latency, cold_over_model, query_latency
from ep_mcp.config.model import PackSettings, Settings
from ep_mcp.index.embed.fake import HashingEmbedder
from ep_mcp.library.runtime import PackRuntime

FILES = {
    "kilns.md": "# Kilns\n\nFire stoneware slowly to cone six.\n",
    "glazes.md": "# Glazes\n\nA celadon glaze wants a reduction firing.\n",
}


def test_each_row_has_a_cpu_figure_and_the_model_alone_is_timed(
    make_pack: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    root = make_pack(FILES)
    where = PackSettings(path=root, index_dir=tmp_path / "idx")
    rt = PackRuntime(where, Settings(), HashingEmbedder(64), tmp_path)
    rt.index(show_progress=False)
    try:
        rows = {r.label: r for r in query_latency(rt, ["stoneware cone", "celadon"], repeats=2)}
    finally:
        rt.close()
    model = rows["the model alone, one query"]
    assert model.queries == 4
    for label in (
        "embedding the query",
        "cached query embedding",
        "cached, right after an embed",
        "lexical mode (no vectors)",
    ):
        row = rows[label]
        assert row.queries == 4
        assert row.cpu_p50_ms is not None and row.cpu_p50_ms >= 0.0
        assert "cpu_p50_ms" in row.to_dict()


def test_the_cold_query_is_set_against_the_model_alone_on_the_wall_clock_and_in_cpu() -> None:
    cold = Latency("embedding the query", 4, 9.0, 12.0, 9.5, 12.0)
    bare = Latency("the model alone, one query", 4, 6.0, 7.0, 6.2, 8.0)
    cached = Latency("cached query embedding", 4, 3.0, 4.0, 3.1, 2.5)
    assert cold_over_model([cold, bare, cached]) == {
        "cold_over_model_p50": 1.5,
        "cold_over_model_cpu_p50": 1.5,
    }
    assert cold_over_model([cold, cached]) == {}  # no model row (a remote provider's bench)
    unmeasured = Latency("the model alone, one query", 4, 6.0, 7.0, 6.2)
    assert cold_over_model([cold, unmeasured]) == {"cold_over_model_p50": 1.5}
