"""Shared fixtures: paths to the shared packs, a tmp pack builder, a fake embedder."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("EP_MCP_SHARED", REPO.parent / "shared"))
PACKS = SHARED / "packs"
SKILLS = SHARED / "skills"
EXAMPLE_PACK = REPO / "src" / "ep_mcp" / "example_pack"


def shared_pack(name: str) -> Path:
    path = PACKS / name
    if not path.is_dir():
        pytest.skip(f"shared pack {name} not present")
    return path


@pytest.fixture
def make_pack(tmp_path: Path) -> Callable[[dict[str, str]], Path]:
    """Write {relative path: text} into a fresh folder and return it."""

    def make(files: dict[str, str], name: str = "pack") -> Path:
        root = tmp_path / name
        for rel, text in files.items():
            p = root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8")
        root.mkdir(exist_ok=True)
        return root

    return make


@pytest.fixture(autouse=True)
def _isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Per-user data (taps, read-only packs' indexes) goes to a temp folder in tests."""
    monkeypatch.setenv("EP_MCP_HOME", str(tmp_path_factory.mktemp("ep-home")))
