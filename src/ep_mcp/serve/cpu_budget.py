"""How many worker processes this machine, container or pod can run: the CPUs it may use (the
cgroup's CPU quota — v2 ``cpu.max``, v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` — and the
CPU affinity), not the node's CPU count, and no more workers than its memory limit (v2
``memory.max``, v1 ``memory.limit_in_bytes``) holds.

Everything is read below an injected root folder (``/`` in production), so tests point it at
fake cgroup files. Nothing read here is trusted: a file that is missing, unreadable or not what
the kernel writes counts as no limit.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

logger = logging.getLogger(__name__)

# memory one worker needs before a pack's vectors: ~160 MB RSS measured (4 workers on the
# example pack: ~860 MB PSS in all), rounded up for requests and a small pack's matrix
WORKER_MEMORY = 256 * 1024 * 1024
_UNLIMITED = 1 << 62  # v1 writes "no limit" as a huge page-rounded number
_MAX_READ = 4096  # cgroup files are one short line; never read more


@dataclass(frozen=True)
class CpuBudget:
    """What the process may use: whole CPUs (≥ 1), the memory limit in bytes (None: none),
    the CPUs of the affinity mask alone, and where each came from (for the log)."""

    cpus: int
    memory_limit: int | None
    source: str
    affinity: int

    @property
    def workers(self) -> int:
        """The most worker processes worth starting: one per usable CPU, and no more than the
        memory limit holds at `WORKER_MEMORY` each (at least 1)."""
        by_memory = self.memory_limit // WORKER_MEMORY if self.memory_limit else self.cpus
        return max(1, min(self.cpus, by_memory))


def _read(path: Path) -> str | None:
    try:
        with path.open("rb") as fh:
            return fh.read(_MAX_READ).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None


def _cgroup_paths(root: Path) -> dict[str, PurePosixPath]:
    """The process's cgroup per controller from ``/proc/self/cgroup`` ("" = the v2 hierarchy)."""
    text = _read(root / "proc" / "self" / "cgroup") or ""
    paths: dict[str, PurePosixPath] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3 or not parts[2].startswith("/"):
            continue
        path = PurePosixPath(parts[2])
        if ".." in path.parts:
            continue
        for controller in parts[1].split(",") if parts[1] else [""]:
            paths[controller] = path
    return paths


def _levels(mount: Path, path: PurePosixPath | None) -> Iterator[Path]:
    """The process's cgroup folder under ``mount`` and each parent up to the mount (a limit on
    a parent applies too). In a container the mount is often the process's own cgroup: the
    path from /proc is then not under it, and the mount alone is read."""
    if path is not None:
        here = mount.joinpath(*path.parts[1:])
        if here.is_dir():
            while here != mount and mount in here.parents:
                yield here
                here = here.parent
    yield mount


def _int(text: str | None) -> int | None:
    if text is None or not text.lstrip("-").isdigit() or len(text) > 20:
        return None
    return int(text)


def _quota(quota: int | None, period: int | None) -> float | None:
    if quota is None or period is None or quota <= 0 or period <= 0:
        return None
    return quota / period


def _v2_cpu(folder: Path) -> float | None:
    fields = (_read(folder / "cpu.max") or "").split()
    if len(fields) != 2 or fields[0] == "max":
        return None
    return _quota(_int(fields[0]), _int(fields[1]))


def _v1_cpu(folder: Path) -> float | None:
    return _quota(
        _int(_read(folder / "cpu.cfs_quota_us")), _int(_read(folder / "cpu.cfs_period_us"))
    )


def _memory(text: str | None) -> int | None:
    value = _int(text)
    return value if value is not None and 0 < value < _UNLIMITED else None


def _cpus(n: float) -> str:
    return f"{n:g} CPU" if n == 1 else f"{n:g} CPUs"


def _smallest(values: list[tuple[float, str]]) -> tuple[float, str] | None:
    return min(values, key=lambda v: v[0]) if values else None


def cpu_budget(root: Path = Path("/"), *, affinity: int | None = None) -> CpuBudget:
    """The CPUs and memory this process may use, read from ``root``'s /proc and /sys/fs/cgroup.
    ``affinity`` (tests) stands for the number of CPUs the scheduler lets this process run on."""
    if affinity is None:
        try:
            affinity = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):  # not on Linux
            affinity = os.cpu_count() or 1
    cgroup = root / "sys" / "fs" / "cgroup"
    paths = _cgroup_paths(root)
    cpu: list[tuple[float, str]] = []
    memory: list[tuple[float, str]] = []
    v2 = cgroup / "unified" if (cgroup / "unified" / "cgroup.controllers").is_file() else cgroup
    if "" in paths:
        for folder in _levels(v2, paths[""]):
            if (q := _v2_cpu(folder)) is not None:
                cpu.append((q, f"cgroup cpu.max {_cpus(q)}"))
            if (m := _memory(_read(folder / "memory.max"))) is not None:
                memory.append((m, "cgroup memory.max"))
    for name in ("cpu", "cpu,cpuacct", "cpuacct,cpu"):
        if (cgroup / name).is_dir() and "cpu" in paths:
            for folder in _levels(cgroup / name, paths["cpu"]):
                if (q := _v1_cpu(folder)) is not None:
                    cpu.append((q, f"cgroup cpu.cfs_quota_us {_cpus(q)}"))
            break
    if (cgroup / "memory").is_dir() and "memory" in paths:
        for folder in _levels(cgroup / "memory", paths["memory"]):
            if (m := _memory(_read(folder / "memory.limit_in_bytes"))) is not None:
                memory.append((m, "cgroup memory.limit_in_bytes"))
    sources = [f"{_cpus(affinity)} in the affinity mask"]
    cpus = max(1, affinity)
    if (quota := _smallest(cpu)) is not None:
        # whole CPUs: a worker per fraction of a CPU would only be throttled
        cpus = max(1, min(cpus, math.floor(quota[0] + 1e-9)))
        sources.append(quota[1])
    limit = _smallest(memory)
    if limit is not None:
        sources.append(f"{limit[1]} {int(limit[0]) / 2**20:.0f} MiB")
    budget = CpuBudget(cpus, int(limit[0]) if limit else None, ", ".join(sources), affinity)
    logger.debug("cpu budget: %s CPUs, %s workers (%s)", budget.cpus, budget.workers, budget.source)
    return budget
