"""Off a terminal (a desktop host, systemd, CI) builds are not silent: progress lines on stderr."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

CLI = [sys.executable, "-c", "from ep_mcp.cli import main; main()"]
PACK = {f"note{i}.md": f"# Note {i}\n\nCompost heap number {i} needs air.\n" for i in range(5)}


@pytest.mark.parametrize("command", ["index", "serve"])
def test_a_run_off_a_terminal_prints_start_and_end_lines_on_stderr_and_nothing_on_stdout(
    make_pack: Callable[[dict[str, str]], Path], tmp_path: Path, command: str
) -> None:
    root = make_pack(PACK)
    args = [*CLI, command, str(root), "--provider", "hashing"]
    if command == "serve":
        args.append("--no-watch")  # stdin at EOF: the server starts, then ends
    proc = subprocess.run(
        args, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if "ep_mcp.progress" in ln]
    assert lines[0].endswith("embedding chunks: 5 to do"), proc.stderr
    assert "embedding chunks: 5/5 done in" in lines[-1]
    if command == "serve":
        assert proc.stdout == ""  # stdout belongs to MCP
