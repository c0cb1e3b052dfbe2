"""A no-change restart to the first answer, in one process (no MCP SDK): what `serve` does
before the SDK speaks.

Run as ``python -m ep_mcp.bench.restart PACK INDEX_DIR QUERY`` in a fresh interpreter (the
imports are part of the figure): the configured query model starts loading on its thread
(`serve.startup.warming`), the pack is opened with its build left to `startup.finish` as
`serve` does, then ``ep_search`` is called through `call_tool`. One JSON line comes out: wall
and CPU seconds (``time.process_time``: every thread of the process, the interpreter's own
start included; ``main_cpu``: the main thread's alone) at each step, the first answer's mode
and, when the model was still loading then, when the same query is answered by both legs.
`restart_in_process` runs it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def _main(pack: str, index_dir: str, query: str) -> dict[str, Any]:
    started = time.perf_counter()
    out: dict[str, Any] = {}

    def mark(name: str) -> None:
        out[f"{name}_s"] = round(time.perf_counter() - started, 3)
        out[f"{name}_cpu_s"] = round(time.process_time(), 3)
        out[f"{name}_main_cpu_s"] = round(time.thread_time(), 3)

    from ep_mcp.cli.app import resolve_settings
    from ep_mcp.serve import startup
    from ep_mcp.tools.registry import ToolContext, call_tool

    mark("imports")
    settings = resolve_settings(None, (pack,), index_dir=Path(index_dir))
    embedder = startup.warming(settings, words_meanwhile=True)  # as one `serve` process
    library = startup.open_packs(settings, embedder, build="later", lexical_first=None)
    startup.finish(library)
    mark("ready")
    try:
        got = call_tool(ToolContext(library), "ep_search", {"query": query})
        mark("first_answer")
        out["first_mode"] = got.get("mode")
        loading = getattr(embedder, "loading", None)
        if loading is not None and loading.wait(timeout=600):  # the model, then both legs
            got = call_tool(ToolContext(library), "ep_search", {"query": query})
            mark("hybrid_answer")
            out["later_mode"] = got.get("mode")
    finally:
        library.close()
    return out


def restart_in_process(
    pack: Path, index_dir: Path, env: Mapping[str, str], query: str
) -> dict[str, Any]:
    """One restart measured in a fresh interpreter (see the module's docstring)."""
    proc = subprocess.run(
        [sys.executable, "-m", "ep_mcp.bench.restart", str(pack), str(index_dir), query],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        from ep_mcp.errors import IndexBuildError

        raise IndexBuildError(f"the in-process restart failed: {proc.stderr.strip()[-500:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


if __name__ == "__main__":  # pragma: no cover - run by restart_in_process
    sys.stdout.write(json.dumps(_main(*sys.argv[1:4])) + "\n")
