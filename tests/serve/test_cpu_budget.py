"""Workers from the CPUs a container may use (cgroup v2 cpu.max, v1 cfs quota, affinity) and
its memory limit, read from fake /proc and /sys/fs/cgroup trees in a temp folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from ep_mcp.cli.serve_cmds import default_workers
from ep_mcp.serve.cpu_budget import WORKER_MEMORY, CpuBudget, cpu_budget

GIB = 1 << 30


def _tree(root: Path, proc_cgroup: str, files: dict[str, str]) -> Path:
    """A fake root: ``/proc/self/cgroup`` and cgroup files (paths under /sys/fs/cgroup)."""
    (root / "proc" / "self").mkdir(parents=True)
    (root / "proc" / "self" / "cgroup").write_text(proc_cgroup)
    for rel, text in files.items():
        path = root / "sys" / "fs" / "cgroup" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    return root


def test_a_v2_pod_limited_to_one_and_a_half_cpus_on_a_16_cpu_node_gets_one_worker(
    tmp_path: Path,
) -> None:
    root = _tree(
        tmp_path,
        "0::/\n",
        {"cgroup.controllers": "cpu memory", "cpu.max": "150000 100000", "memory.max": str(GIB)},
    )
    budget = cpu_budget(root, affinity=16)
    assert budget == CpuBudget(
        1,
        GIB,
        "16 CPUs in the affinity mask, cgroup cpu.max 1.5 CPUs, cgroup memory.max 1024 MiB",
        16,
    )
    assert budget.workers == 1
    assert default_workers("http", False, budget=budget) == 1
    assert default_workers("http", False, budget=cpu_budget(tmp_path / "none", affinity=16)) == 4


@pytest.mark.parametrize(
    ("cpu_max", "memory_max", "workers"),
    [
        ("200000 100000", str(GIB), 2),  # the quota
        ("max 100000", str(GIB), 4),  # no CPU limit: 1 GiB holds 4 workers
        ("800000 100000", str(GIB // 2), 2),  # the memory limit
        ("800000 100000", "max", 8),  # neither: the quota (default_workers caps at 4)
        ("800000 100000", str(WORKER_MEMORY // 2), 1),  # never 0
    ],
)
def test_v2_workers_are_the_quota_within_the_memory_limit(
    tmp_path: Path, cpu_max: str, memory_max: str, workers: int
) -> None:
    root = _tree(
        tmp_path,
        "0::/\n",
        {"cgroup.controllers": "cpu memory", "cpu.max": cpu_max, "memory.max": memory_max},
    )
    assert cpu_budget(root, affinity=16).workers == workers
    assert default_workers("http", False, budget=cpu_budget(root, affinity=16)) == min(workers, 4)


def test_a_parent_cgroups_limit_applies_to_the_process_below_it(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        "0::/kubepods/pod1/c1\n",
        {
            "cgroup.controllers": "cpu memory",
            "cpu.max": "max 100000",
            "kubepods/pod1/cpu.max": "300000 100000",
            "kubepods/pod1/memory.max": str(4 * GIB),
            "kubepods/pod1/c1/cpu.max": "max 100000",
            "kubepods/pod1/c1/memory.max": "max",
        },
    )
    budget = cpu_budget(root, affinity=16)
    assert (budget.cpus, budget.memory_limit) == (3, 4 * GIB)


def test_v1_cfs_quota_in_a_container_whose_mount_is_its_own_cgroup(tmp_path: Path) -> None:
    # /proc names the host's path (/docker/abc); the container sees its cgroup as the mount
    root = _tree(
        tmp_path,
        "9:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/\n",
        {
            "cpu,cpuacct/cpu.cfs_quota_us": "300000",
            "cpu,cpuacct/cpu.cfs_period_us": "100000",
            "memory/memory.limit_in_bytes": str(2 * GIB),
        },
    )
    budget = cpu_budget(root, affinity=16)
    assert (budget.cpus, budget.memory_limit, budget.workers) == (3, 2 * GIB, 3)
    assert "cgroup cpu.cfs_quota_us 3 CPUs" in budget.source


def test_v1_without_limits_and_a_smaller_affinity_mask(tmp_path: Path) -> None:
    # what this build machine looks like: v1 controllers, quota -1, the "unlimited" number
    root = _tree(
        tmp_path,
        "4:memory:/process_api/abc\n1:cpu:/\n0::/\n",
        {
            "cpu/cpu.cfs_quota_us": "-1",
            "cpu/cpu.cfs_period_us": "100000",
            "memory/process_api/abc/memory.limit_in_bytes": "9223372036854771712",
            "memory/memory.limit_in_bytes": "9223372036854771712",
        },
    )
    assert cpu_budget(root, affinity=2) == CpuBudget(2, None, "2 CPUs in the affinity mask", 2)


@pytest.mark.parametrize(
    ("proc_cgroup", "files"),
    [
        ("0::/\n", {"cpu.max": "lots 100000", "memory.max": "-5"}),
        ("0::/\n", {"cpu.max": "100000 0", "memory.max": "1e9"}),
        ("0::/\n", {"cpu.max": "0 100000", "memory.max": "9" * 40}),
        ("0::/../../etc\n", {"cpu.max": "garbage"}),
        ("not a cgroup file", {}),
        ("0::/\n", {"cpu.max": "\xff\xfe 1"}),
    ],
)
def test_what_the_kernel_would_not_write_counts_as_no_limit(
    tmp_path: Path, proc_cgroup: str, files: dict[str, str]
) -> None:
    root = _tree(tmp_path, proc_cgroup, {"cgroup.controllers": "cpu memory", **files})
    assert cpu_budget(root, affinity=6) == CpuBudget(6, None, "6 CPUs in the affinity mask", 6)


def test_the_real_machine_has_at_least_one_worker() -> None:
    budget = cpu_budget()
    assert budget.cpus >= 1 and budget.workers >= 1
    assert budget.source.split()[1] in ("CPU", "CPUs")


def test_the_start_says_when_a_containers_limit_chose_the_workers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = _tree(tmp_path, "0::/\n", {"cgroup.controllers": "cpu", "cpu.max": "100000 100000"})
    with caplog.at_level("INFO", logger="ep_mcp.progress"):
        assert default_workers("http", False, budget=cpu_budget(root, affinity=8)) == 1
        assert default_workers("http", False, budget=cpu_budget(tmp_path / "x", affinity=8)) == 4
    said = [r.getMessage() for r in caplog.records if r.name == "ep_mcp.progress"]
    assert said == ["1 worker(s) by default: 8 CPUs in the affinity mask, cgroup cpu.max 1 CPU"]
