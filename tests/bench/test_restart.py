"""The no-change restart measured in one process: imports, open, the first `ep_search`."""

from __future__ import annotations

import importlib
import os
import py_compile
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ep_mcp.bench.index import _in_process_line
from ep_mcp.bench.restart import compiled_from_source, restart_in_process
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
    assert isinstance(run["from_source"], int)


def test_a_module_without_current_bytecode_is_counted_as_compiled_from_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "restart_probe_mod.py"
    source.write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    module = importlib.import_module("restart_probe_mod")
    try:
        assert compiled_from_source([module]) == 1  # no bytecode written
        py_compile.compile(str(source), cfile=module.__spec__.cached)
        assert compiled_from_source([module]) == 0
        source.write_text("X = 22\n")  # the source moved on: its bytecode is stale
        os.utime(source, (1, 1))
        assert compiled_from_source([module]) == 1
        assert "compiled from source" in _in_process_line(_RUN | {"from_source": 3})[0]
        assert "compiled from source" not in _in_process_line(_RUN | {"from_source": 0})[0]
    finally:
        sys.modules.pop("restart_probe_mod", None)


_RUN = {
    "first_answer_s": 0.4,
    "first_answer_cpu_s": 0.3,
    "first_answer_main_cpu_s": 0.2,
    "first_mode": "lexical",
}
