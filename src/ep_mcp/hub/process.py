"""The one way the hub runs an outside program (git, gh, claude): text in and out, captured,
bounded by a timeout, never reading the server's own stdin, never raising on a non-zero exit."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path


def run_text(
    cmd: Sequence[str],
    *,
    env: Mapping[str, str],
    timeout: float,
    cwd: Path | str | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """``cmd`` run to its end; ``stdin`` is its input (none: it reads an empty stream).
    ``subprocess.TimeoutExpired`` and ``OSError`` reach the caller, which words them."""
    return subprocess.run(
        cmd,
        cwd=cwd,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        check=False,
    )
