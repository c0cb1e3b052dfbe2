"""`ep-mcp doctor` says what is installed and which vector engine will be used."""

from __future__ import annotations

import pytest

import ep_mcp.index.store as store_module
from ep_mcp.doctor import run_checks


def test_a_healthy_install_passes_every_check() -> None:
    checks = {c.name: c for c in run_checks()}
    assert all(c.ok for c in checks.values()), [c for c in checks.values() if not c.ok]
    assert "384-d" in checks["local model"].detail


def test_doctor_says_when_vectors_fall_back_to_the_numpy_scan(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(store_module, "sqlite_vec_status", lambda: (False, "OSError: nope"))
    check = {c.name: c for c in run_checks()}["sqlite-vec"]
    assert "numpy" in check.detail and "nope" in check.detail
