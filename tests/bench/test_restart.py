"""The no-change restart measured in one process: imports, open, the first `ep_search`."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ep_mcp.bench.index import _in_process_line
from ep_mcp.bench.restart import restart_in_process
from ep_mcp.cli import main


def test_a_restart_in_process_is_timed_to_its_first_answer(
    tmp_path: Path, make_pack: Callable[[dict[str, str]], Path]
) -> None:
    pack = make_pack({"a.md": "# Zebras\n\nZebras graze on the savanna.\n"})
    index = tmp_path / "index"
    env = {**os.environ, "EP_MCP_HOME": str(tmp_path / "home")}
    env["EP_MCP_EMBEDDING_PROVIDER"] = "hashing"
    from click.testing import CliRunner

    built = CliRunner().invoke(main, ["index", str(pack), "--index-dir", str(index)], env=env)
    assert built.exit_code == 0, built.output
    run = restart_in_process(pack, index, env, "zebras")
    assert run["first_mode"] == "hybrid"  # hashing: no model to wait for
    assert 0 < run["imports_cpu_s"] <= run["ready_cpu_s"] <= run["first_answer_cpu_s"]
    assert 0 < run["first_answer_main_cpu_s"] <= run["first_answer_cpu_s"]
    assert "restart, in process" in _in_process_line(run)[0]
