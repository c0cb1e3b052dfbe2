"""A build killed with SIGKILL mid-way leaves the previous index serving, and a re-run resumes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ep_mcp.index.store import Store

FILES = 200  # four embedding batches of 64: the kill lands after the first is cached
HERE = Path(__file__).resolve().parent
WRAPPER = "import slow_provider; from ep_mcp.cli import main; main()"
MARKER_ENV = "EP_MCP_TEST_PAUSE_MARKER"  # read by slow_provider.py


def write_pack(root: Path, version: str) -> None:
    root.mkdir(exist_ok=True)
    for i in range(FILES):
        (root / f"doc{i:03d}.md").write_text(
            f"# Document {i}\n\nThis is the {version}version text of document {i}, "
            f"about topic{i} and {version}marker.\n",
            encoding="utf-8",
        )


def ep_mcp(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRAPPER, *args],
        env=env,
        cwd=HERE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(path: Path, proc: subprocess.Popen[str], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if proc.poll() is not None:
            _, err = proc.communicate()
            pytest.fail(f"the build ended before the pause (rc {proc.returncode}): {err}")
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            pytest.fail("the build never reached the pause")
        time.sleep(0.02)


def lexical_files(store: Store, word: str) -> set[str]:
    ids = [cid for cid, _ in store.lexical_top([word], 500)]
    return {sc.file.path for sc in store.chunks_by_ids(ids).values()}


def test_a_killed_build_leaves_the_previous_index_serving_and_a_rerun_resumes(
    tmp_path: Path,
) -> None:
    pack = tmp_path / "pack"
    index_dir = tmp_path / "index"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    }
    args = ["index", str(pack), "--index-dir", str(index_dir), "--provider", "slow", "--json"]

    write_pack(pack, "old")
    first = ep_mcp(args, env)
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert json.loads(out)["chunks"] == FILES

    write_pack(pack, "new")
    marker = tmp_path / "paused"
    killed = ep_mcp(args, {**env, MARKER_ENV: str(marker)})
    wait_for(marker, killed)
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=30)
    assert killed.returncode == -signal.SIGKILL

    store = Store(index_dir / "index.db", read_only=True)
    try:
        assert len(lexical_files(store, "oldmarker")) == FILES  # the old index answers, whole
        assert lexical_files(store, "newmarker") == set()
        assert store.counts()["cached"] >= FILES + 64  # the first new batch survived the kill
    finally:
        store.close()

    rerun = ep_mcp(args, env)
    out, err = rerun.communicate(timeout=120)
    assert rerun.returncode == 0, err
    report = json.loads(out)
    assert report["reused"] >= 64 and report["embedded"] == FILES - report["reused"]
    store = Store(index_dir / "index.db", read_only=True)
    try:
        assert len(lexical_files(store, "newmarker")) == FILES
        assert lexical_files(store, "oldmarker") == set()
    finally:
        store.close()


def test_ctrl_c_mid_build_says_the_next_run_resumes_and_exits_130(tmp_path: Path) -> None:
    pack = tmp_path / "pack"
    index_dir = tmp_path / "index"
    write_pack(pack, "new")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        MARKER_ENV: str(tmp_path / "paused"),  # the second batch waits: the build is mid-way
    }
    args = ["index", str(pack), "--index-dir", str(index_dir), "--provider", "slow", "--json"]
    proc = ep_mcp(args, env)
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:  # the event: the embedding run has begun (no sleep, no clock)
        seen.append(line)
        if "embedding chunks: " in line and line.rstrip().endswith("to do"):
            break
    else:
        pytest.fail(f"no progress line before the end: {''.join(seen)}")
    wait_for(tmp_path / "paused", proc)  # one batch stored, the next one under way
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "stopped — the next `ep-mcp index` resumes where this one stopped" in err
    assert "Aborted!" not in err and "Traceback" not in err and out == ""
    env.pop(MARKER_ENV)
    rerun = ep_mcp(args, env)
    out, err = rerun.communicate(timeout=120)
    assert rerun.returncode == 0, err
    report = json.loads(out)
    assert report["reused"] >= 64 and report["chunks"] == FILES  # resumed, not restarted
