"""The build around the model and the no-change restart, two source trees interleaved run by
run in fresh interpreters (the same Python and packages for both; each tree on PYTHONPATH).

    python scripts/ab_startup.py build PACK OLD/src NEW/src [--pairs 5]
    EP_MCP_HOME=... python scripts/ab_startup.py restart PACK INDEX_DIR OLD/src NEW/src \\
        [--pairs 3] [--query TEXT]

``build``: `ep-mcp index PACK --provider none` into a fresh index folder each run: CPU seconds
of the child (``getrusage``: the process, Python's start and imports included) and the
report's in-process ``cpu_seconds`` (the build step: headings, chunks, token counts and writes,
after the pack is read) — the two CPU figures of `ep-mcp bench index`'s ``words only`` line.
``restart``: `bench/restart.py`'s child on an index built already (imports, `warming`,
`open_packs(build="later")`, `finish`, then ``ep_search``): wall, CPU of the process and of
the main thread at the first answer. Which tree runs first alternates; the medians come last,
with the load average before and after. Compare the two ``build`` indexes with
``scripts/compare_indexes.py OUT/ab-old/index.db OUT/ab-new/index.db``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CLI = "from ep_mcp.cli import main; main()"


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _env(src: str, home: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": src, "EP_MCP_HOME": os.environ.get("EP_MCP_HOME", home)}


def build_run(pack: str, src: str, out: Path, name: str) -> dict[str, float]:
    index = out / f"ab-{name}"
    shutil.rmtree(index, ignore_errors=True)
    args = ["index", pack, "--provider", "none", "--index-dir", str(index), "--json"]
    cpu, started = _cpu(), time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", CLI, *args],
        env=_env(src, str(out / "home")),
        capture_output=True,
        text=True,
        check=True,
    )
    wall, used = time.perf_counter() - started, _cpu() - cpu
    report = json.loads(proc.stdout)
    return {"process_cpu_s": used, "in_process_cpu_s": report["cpu_seconds"], "wall_s": wall}


def restart_run(pack: str, index: str, query: str, src: str) -> dict[str, float]:
    sys.path.insert(0, src)
    from ep_mcp.bench.restart import CHILD

    sys.path.remove(src)
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, pack, index, query],
        env=_env(src, ""),
        capture_output=True,
        text=True,
        check=True,
    )
    got: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    # from_source: modules compiled on the spot (stale bytecode) — compileall both trees first
    return {k: got[k] for k in got if k.startswith(("first_answer", "hybrid_answer", "from_"))}


def interleave(
    pairs: int, trees: dict[str, str], run: Callable[[str, str], dict[str, float]]
) -> None:
    print("load before", [round(x, 2) for x in os.getloadavg()], flush=True)
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for i in range(pairs):
        order = list(trees.items()) if i % 2 == 0 else list(reversed(trees.items()))
        for name, src in order:
            got = run(name, src)
            rows[name].append(got)
            print(name, {k: round(v, 3) for k, v in got.items()}, flush=True)
    print("load after", [round(x, 2) for x in os.getloadavg()])
    for name, done in rows.items():
        keys = sorted(set().union(*done))
        medians = {k: round(statistics.median(r[k] for r in done if k in r), 3) for k in keys}
        print(name, "median", medians)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    b = sub.add_parser("build")
    b.add_argument("pack")
    r = sub.add_parser("restart")
    r.add_argument("pack")
    r.add_argument("index_dir")
    r.add_argument("--query", default="how do I set up a Zigbee coordinator")
    for p in (b, r):
        p.add_argument("old")
        p.add_argument("new")
        p.add_argument("--pairs", type=int, default=5 if p is b else 3)
    args = parser.parse_args()
    trees = {"old": args.old, "new": args.new}
    if args.what == "build":
        out = Path(tempfile.mkdtemp(prefix="ep-ab-"))
        print("indexes in", out)
        interleave(args.pairs, trees, lambda name, src: build_run(args.pack, src, out, name))
    else:
        if not os.environ.get("EP_MCP_HOME"):
            parser.error("set EP_MCP_HOME to the home the index was built with")
        interleave(
            args.pairs,
            trees,
            lambda name, src: restart_run(args.pack, args.index_dir, args.query, src),
        )


if __name__ == "__main__":
    main()
