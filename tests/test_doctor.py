"""`ep-mcp doctor` says what is installed and which vector engine will be used."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

import ep_mcp.index.store as store_module
from ep_mcp.doctor import run_checks


def run(home: Path | None = None, **env: str) -> list:  # type: ignore[type-arg]
    return run_checks(home or Path("/nonexistent/ep-mcp-home"), {**os.environ, **env})


def test_a_healthy_install_passes_every_check() -> None:
    checks = {c.name: c for c in run()}
    assert all(c.ok for c in checks.values()), [c for c in checks.values() if not c.ok]
    assert "384-d" in checks["local model"].detail


def test_doctor_says_when_vectors_fall_back_to_the_numpy_scan(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(store_module, "sqlite_vec_status", lambda: (False, "OSError: nope"))
    check = {c.name: c for c in run()}["sqlite-vec"]
    assert "numpy" in check.detail and "nope" in check.detail


def test_doctor_lists_the_data_dir_its_indexes_and_taps(tmp_path: Path) -> None:
    (tmp_path / "indexes" / "notes-abc123").mkdir(parents=True)
    (tmp_path / "indexes" / "notes-abc123" / "index.db").write_bytes(b"x" * 2_000_000)
    (tmp_path / "taps" / "acme-skills").mkdir(parents=True)
    checks = run(tmp_path)
    details = {c.name: c.detail for c in checks}
    assert str(tmp_path) in details["data dir"]
    assert "notes-abc123" in details["index"] and "2.0 MB" in details["index"]
    assert details["taps"] == "acme-skills"


def test_doctor_says_which_outside_tools_are_missing(tmp_path: Path) -> None:
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    details = {c.name: c.detail for c in run(PATH=str(empty_bin), ANTHROPIC_API_KEY="")}
    assert "not found" in details["git"] and "not found" in details["gh"]
    assert details["llm"].startswith("none")
    fake = empty_bin / "claude"
    fake.write_text("#!/bin/sh\necho 1.0\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    details = {c.name: c.detail for c in run(PATH=str(empty_bin))}
    assert "claude CLI" in details["llm"]
