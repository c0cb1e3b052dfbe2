"""A no-change restart to the first answer, in one process (no MCP SDK): what `serve` does
before the SDK speaks.

Run in a fresh interpreter by `restart_in_process` (the imports are part of the figure, the
CLI's first, as `ep-mcp serve` has them): the configured query model starts loading on its thread
(`serve.startup.warming`), the pack is opened with its build left to `startup.finish` as
`serve` does, then ``ep_search`` is called through `call_tool`. One JSON line comes out: wall
and CPU seconds (``time.process_time``: every thread of the process, the interpreter's own
start included; ``main_cpu``: the main thread's alone) at each step, the first answer's mode
and, when the model was still loading then, when the same query is answered by both legs;
``from_source``: how many of the modules it imported had no up-to-date bytecode (compiled on
the spot: an editable install under ``PYTHONDONTWRITEBYTECODE``, say — an installed package's
start does not pay that; ``python -m compileall`` the source tree first).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from ep_mcp.config.env import resolve_environment
from ep_mcp.config.model import PackSettings, Settings
from ep_mcp.errors import IndexBuildError
from ep_mcp.serve import startup
from ep_mcp.tools.registry import ToolContext, call_tool

# the child: the CLI imported first with its `serve` command, as `ep-mcp serve` has them (a
# process of its own, as `bench.index` runs the CLI: nothing of ours imports the CLI module)
CHILD = (
    "import time; started = time.perf_counter()\n"
    "import json, sys, ep_mcp.cli.app\n"
    "ep_mcp.cli.app.main.get_command(None, 'serve')\n"  # its module, as `ep-mcp serve` has it
    "from ep_mcp.bench.restart import measure\n"
    "sys.stdout.write(json.dumps(measure(started, *sys.argv[1:4])) + '\\n')\n"
)


def measure(started: float, pack: str, index_dir: str, query: str) -> dict[str, Any]:
    """The restart, timed from ``started`` (``perf_counter`` at the child's first line)."""
    out: dict[str, Any] = {}

    def mark(name: str) -> None:
        out[f"{name}_s"] = round(time.perf_counter() - started, 3)
        out[f"{name}_cpu_s"] = round(time.process_time(), 3)
        out[f"{name}_main_cpu_s"] = round(time.thread_time(), 3)

    mark("imports")
    packs = (PackSettings(path=Path(pack).resolve(), index_dir=Path(index_dir)),)
    settings = resolve_environment(Settings(packs=packs), dict(os.environ))
    embedder = startup.warming(settings, words_meanwhile=True)  # as one `serve` process
    library = startup.open_packs(settings, embedder, build="later", words_first=None)
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
    out["from_source"] = compiled_from_source(sys.modules.values())
    return out


def compiled_from_source(modules: Iterable[ModuleType | None]) -> int:
    """How many of ``modules`` (loaded from a ``.py`` file) have no bytecode file recording
    their source's current modification time and size: each was compiled when imported."""
    stale = 0
    for module in modules:
        spec = getattr(module, "__spec__", None)
        origin, cached = getattr(spec, "origin", None), getattr(spec, "cached", None)
        if not (origin and cached and origin.endswith(".py")):
            continue
        try:
            source = os.stat(origin)
            with open(cached, "rb") as pyc:
                header = pyc.read(16)
        except OSError:
            stale += 1
            continue
        flags = int.from_bytes(header[4:8], "little")
        if flags:  # hash-based bytecode: checked by its own rule, not by time
            continue
        mtime, size = (
            int.from_bytes(header[8:12], "little"),
            int.from_bytes(header[12:16], "little"),
        )
        stale += (mtime, size) != (int(source.st_mtime) & 0xFFFFFFFF, source.st_size & 0xFFFFFFFF)
    return stale


def restart_in_process(
    pack: Path, index_dir: Path, env: Mapping[str, str], query: str
) -> dict[str, Any]:
    """One restart measured in a fresh interpreter (see the module's docstring)."""
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(pack), str(index_dir), query],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        raise IndexBuildError(f"the in-process restart failed: {proc.stderr.strip()[-500:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result
