"""`ep-mcp bench index PACK`: how long indexing takes, measured the way users meet it.

Every timing is a fresh `ep-mcp index` process on a private copy of the pack (mtimes kept), with
its own index folder, so the first build starts with an empty embedding cache:

1. full build — no index, no cache;
2. no-change re-index — the median of a few runs (and the fastest);
3. one-file change — one line appended to one file's body, then re-index;
4. the non-embedding build — a fresh index with ``--provider none``, without the model (the
   median of ``runs``): the process (Python's start, the imports, reading the pack, the build,
   its record) and the build step alone, the report's ``seconds`` and ``cpu_seconds`` (headings,
   chunks, token counts and writes, after the pack is read) — the two figures
   ``scripts/ab_startup.py build`` prints as ``process_cpu_s`` and ``in_process_cpu_s``.

Peak memory is the largest resident set of those child processes (``getrusage`` of children).
The machine's load average is reported with the numbers: this is a shared machine.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ep_mcp.bench.first_answer import first_answer
from ep_mcp.bench.restart import restart_in_process
from ep_mcp.errors import IndexBuildError

EDIT = "\n\nBenchmark edit: one more sentence, appended to the body.\n"


def index_command() -> list[str]:
    """How to start `ep-mcp` from this interpreter (the console script when it is installed)."""
    script = Path(sys.executable).with_name("ep-mcp")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from ep_mcp.cli import main; main()"]


@dataclass(frozen=True)
class Run:
    wall_s: float
    cpu_s: float  # user + system time of the child: what the run costs without contention
    report: dict[str, Any]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(args: Sequence[str], env: Mapping[str, str]) -> Run:
    cpu = _cpu()
    started = time.perf_counter()
    proc = subprocess.run(
        [*index_command(), *args], env=dict(env), capture_output=True, text=True, timeout=3600
    )
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise IndexBuildError(
            f"`ep-mcp {' '.join(args)}` failed ({proc.returncode}): {proc.stderr.strip()[-500:]}"
        )
    return Run(elapsed, _cpu() - cpu, dict(json.loads(proc.stdout)))


def pick_file(root: Path) -> Path:
    """A typical content file to edit: the median-sized markdown file outside `_` navigation."""
    files = sorted(
        (p for p in root.rglob("*.md") if not p.name.startswith("_") and ".ep-mcp" not in p.parts),
        key=lambda p: (p.stat().st_size, str(p)),
    )
    if not files:
        raise IndexBuildError(f"no markdown files in {root} — nothing to benchmark")
    return files[len(files) // 2]


def bench_index(
    pack: Path,
    work: Path,
    env: Mapping[str, str],
    *,
    provider: str | None = None,
    runs: int = 3,
    query: str | None = None,
) -> dict[str, Any]:
    """Measure a full build, a no-change re-index and a one-file change of ``pack``.

    ``work`` is an empty folder for the copy of the pack, its index and a private home;
    ``env`` is the environment of the child processes (``EP_MCP_HOME`` is set to ``work``'s).
    """
    child_env = {**env, "EP_MCP_HOME": str(work / "home")}
    load_before = os.getloadavg()
    copy = work / "pack"
    shutil.copytree(pack, copy, symlinks=True, ignore=shutil.ignore_patterns(".ep-mcp"))
    cold = _cold_start(copy, work, env, provider, query) if query else {}
    args = ["index", str(copy), "--index-dir", str(work / "index"), "--json"]
    if provider:
        args += ["--provider", provider]

    full = _run(args, child_env)
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    quiet = [_run(args, child_env) for _ in range(max(1, runs))]
    target = pick_file(copy)
    target.chmod(target.stat().st_mode | 0o200)  # copies of read-only packs stay read-only
    with target.open("a", encoding="utf-8") as handle:
        handle.write(EDIT)
    one = _run(args, child_env)
    served = _first_answers(copy, work / "served", child_env, provider, query) if query else {}
    words = _words_only(copy, work, child_env, runs)

    return {
        **served,
        **cold,
        "pack": str(pack),
        "slug": full.report.get("pack"),
        "files": full.report.get("files"),
        "chunks": full.report.get("chunks"),
        "vector_engine": full.report.get("vector_engine"),
        "full_build_s": round(full.wall_s, 3),
        "full_build_cpu_s": round(full.cpu_s, 3),
        "full_build_in_process_s": round(float(full.report.get("seconds", 0.0)), 3),
        "full_build_embedded": full.report.get("embedded"),
        "no_change_s": round(statistics.median(r.wall_s for r in quiet), 3),
        "no_change_min_s": round(min(r.wall_s for r in quiet), 3),
        "no_change_cpu_s": round(statistics.median(r.cpu_s for r in quiet), 3),
        "no_change_runs": len(quiet),
        "one_file_change_s": round(one.wall_s, 3),
        "one_file_change_cpu_s": round(one.cpu_s, 3),
        "one_file_change_in_process_s": round(float(one.report.get("seconds", 0.0)), 3),
        "one_file_changed_file": str(target.relative_to(copy)),
        "one_file_embedded": one.report.get("embedded"),
        **words,
        "peak_rss_mb": round(peak_kb / 1024, 1),
        "cpus": os.cpu_count(),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "python": sys.version.split()[0],
    }


def _words_only(copy: Path, work: Path, env: Mapping[str, str], runs: int) -> dict[str, Any]:
    """A fresh build with no embedding provider, ``runs`` times: what a build costs around the
    model (the median; in process: the build step alone — headings, chunks, counts, writes —
    without Python's start, the imports and reading the pack)."""
    done: list[Run] = []
    for i in range(max(1, runs)):
        index = work / f"words-index-{i}"
        done.append(
            _run(
                ["index", str(copy), "--index-dir", str(index), "--json", "--provider", "none"], env
            )
        )
        shutil.rmtree(index, ignore_errors=True)
    median = statistics.median
    return {
        "words_build_s": round(median(r.wall_s for r in done), 3),
        "words_build_cpu_s": round(median(r.cpu_s for r in done), 3),
        "words_build_in_process_s": round(median(float(r.report["seconds"]) for r in done), 3),
        "words_build_in_process_cpu_s": round(
            median(float(r.report.get("cpu_seconds", 0.0)) for r in done), 3
        ),
        "words_build_runs": len(done),
    }


def _cold_start(
    copy: Path, work: Path, env: Mapping[str, str], provider: str | None, query: str
) -> dict[str, Any]:
    """`ep-mcp serve` on the never-indexed pack from a home with nothing in it (no compiled
    model: the first start ever), before anything else of the run has warmed it."""

    home = {**env, "EP_MCP_HOME": str(work / "cold-home")}
    load = os.getloadavg()
    run = first_answer(
        index_command(),
        copy,
        work / "cold-index",
        home,
        query,
        provider=provider,
        until_hybrid=False,
    )
    return {"fresh_home": {**run, "load_average_before": [round(x, 2) for x in load]}}


def _first_answers(
    copy: Path, index: Path, env: Mapping[str, str], provider: str | None, query: str
) -> dict[str, Any]:
    """`ep-mcp serve` on the pack with no index, then restarted once its index is complete."""

    fresh = first_answer(index_command(), copy, index, env, query, provider=provider)
    restarts = [
        first_answer(index_command(), copy, index, env, query, provider=provider) for _ in range(3)
    ]
    best = min(restarts, key=lambda r: r["first_answer_s"])

    in_process = [restart_in_process(copy, index, _with(env, provider), query) for _ in range(3)]
    return {
        "first_answer_query": query,
        "fresh": fresh,
        "restart": best,
        "restart_runs": [r["first_answer_s"] for r in restarts],
        "restart_in_process": min(in_process, key=lambda r: r["first_answer_cpu_s"]),
    }


def _with(env: Mapping[str, str], provider: str | None) -> dict[str, str]:
    return {**env, "EP_MCP_EMBEDDING_PROVIDER": provider} if provider else dict(env)


def _served_lines(result: Mapping[str, Any]) -> list[str]:
    fresh, restart = result.get("fresh"), result.get("restart")
    if not fresh or not restart:
        return []
    hybrid = fresh.get("hybrid_answer_s")
    cold = result.get("fresh_home")
    first = (
        [
            f"  serve, new home   initialize {cold['initialize_s']:.2f} s, first answer "
            f"{cold['first_answer_s']:.2f} s ({cold['first_mode']}; no compiled model yet)"
        ]
        if cold
        else []
    )
    return [
        *first,
        f"  serve, no index   initialize {fresh['initialize_s']:.2f} s, first answer "
        f"{fresh['first_answer_s']:.2f} s ({fresh['first_mode']})"
        + (f", hybrid at {hybrid:.1f} s" if hybrid else ""),
        f"  serve, restart    initialize {restart['initialize_s']:.2f} s, first answer "
        f"{restart['first_answer_s']:.2f} s ({restart['first_mode']}; fastest of "
        f"{len(result['restart_runs'])})",
        *_in_process_line(result.get("restart_in_process")),
    ]


def _in_process_line(run: Mapping[str, Any] | None) -> list[str]:
    if not run:
        return []
    hybrid = run.get("hybrid_answer_s")
    return [
        f"  restart, in process  first answer {run['first_answer_s']:.2f} s (cpu "
        f"{run['first_answer_cpu_s']:.2f} s, main thread {run['first_answer_main_cpu_s']:.2f} s; "
        f"{run['first_mode']})"
        + (f", hybrid at {hybrid:.2f} s" if hybrid else "")
        + "; least CPU of 3"
        + (
            f"; {run['from_source']} modules compiled from source (stale bytecode: "
            "`python -m compileall` the source first)"
            if run.get("from_source")
            else ""
        )
    ]


def render(result: Mapping[str, Any]) -> str:
    return "\n".join(
        [
            f"{result['slug']}: {result['files']} files, {result['chunks']} chunks "
            f"({result['vector_engine']})",
            f"  full build        {result['full_build_s']:>8.2f} s  "
            f"(cpu {result['full_build_cpu_s']:.2f} s; {result['full_build_embedded']} embedded)",
            f"  no-change         {result['no_change_s']:>8.3f} s  "
            f"(cpu {result['no_change_cpu_s']:.3f} s; median of {result['no_change_runs']}, "
            f"fastest {result['no_change_min_s']:.3f} s)",
            f"  one-file change   {result['one_file_change_s']:>8.2f} s  "
            f"(cpu {result['one_file_change_cpu_s']:.2f} s; "
            f"{result['one_file_embedded']} embedded, "
            f"{result['one_file_changed_file']})",
            f"  words only        {result['words_build_s']:>8.2f} s  "
            f"(cpu {result['words_build_cpu_s']:.2f} s; the build step "
            f"{result['words_build_in_process_s']:.2f} s, cpu "
            f"{result['words_build_in_process_cpu_s']:.2f} s; --provider none, median of "
            f"{result['words_build_runs']})",
            *_served_lines(result),
            f"  peak memory       {result['peak_rss_mb']:>8.1f} MB",
            f"  machine           {result['cpus']} CPUs, load "
            f"{' '.join(str(x) for x in result['load_average_before'])} before, "
            f"{' '.join(str(x) for x in result['load_average_after'])} after",
        ]
    )
