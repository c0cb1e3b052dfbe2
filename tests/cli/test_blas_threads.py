"""The command line runs numpy's BLAS on one thread (OpenBLAS helpers spin a core between
small matrix products), unless the environment already chose a number."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = """
import os
from ep_mcp.cli import main
main(["config", "--defaults"], standalone_mode=False)
import numpy
numpy.ones((512, 512)) @ numpy.ones(512)
print(os.environ.get("OPENBLAS_NUM_THREADS"), len(os.listdir("/proc/self/task")))
"""


def probe(tmp_path: Path, **env: str) -> tuple[str, int]:
    clean = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**clean, "EP_MCP_HOME": str(tmp_path), **env},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    value, threads = done.stdout.strip().splitlines()[-1].split()
    return value, int(threads)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
def test_numpys_blas_runs_on_one_thread_unless_the_environment_says(tmp_path: Path) -> None:
    assert probe(tmp_path) == ("1", 1)  # no helper thread was started
    assert probe(tmp_path, OPENBLAS_NUM_THREADS="2")[0] == "2"  # a choice made is kept
