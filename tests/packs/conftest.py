from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import shared_path as shared  # the one helper for ../shared (EP_MCP_SHARED)

__all__ = ["Writer", "shared"]

Writer = Callable[..., Path]


@pytest.fixture
def write(tmp_path: Path) -> Writer:
    """write("a/b.md", "text") creates tmp_path/pack/a/b.md and returns the pack root."""
    root = tmp_path / "pack"
    root.mkdir(exist_ok=True)

    def _write(rel: str, content: str | bytes = "") -> Path:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        return root

    return _write
