"""What `serve` does before the MCP SDK is imported: the model and the packs on threads."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from ep_mcp.config import PackSettings, Settings
from ep_mcp.errors import PackError
from ep_mcp.serve import startup


def test_work_in_the_background_hands_back_its_result_or_its_error() -> None:
    seen: list[str] = []

    def work() -> int:
        seen.append(threading.current_thread().name)
        return 42

    assert startup.in_background(work, "ep-mcp-test").result(timeout=10) == 42
    assert seen == ["ep-mcp-test"]

    def fail() -> int:
        raise PackError("pack folder 'x' does not exist")

    with pytest.raises(PackError, match="does not exist"):
        startup.in_background(fail, "ep-mcp-test").result(timeout=10)


def test_the_startup_module_does_not_import_the_mcp_sdk() -> None:
    """Its point is to start work before that import: importing it must not trigger it."""
    import subprocess

    code = "import sys, ep_mcp.serve.startup; print('mcp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_packs_open_indexed_and_tools_get_their_validators(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "a.md").write_text("# Alpha\n\nAlpha text about zebras.\n", encoding="utf-8")
    (pack / "b.md").write_text("---\ntitle: [unclosed\n---\n# Beta\n", encoding="utf-8")
    settings = Settings(packs=(PackSettings(path=pack),), home=tmp_path / "home")
    with caplog.at_level("WARNING", logger="ep_mcp.serve.startup"):
        library = startup.open_packs(settings, None)
    try:
        (rt,) = list(library)
        assert rt.build_state()["chunks"] == 2
        assert "b.md" in caplog.text  # the pack's warnings are said at start-up
    finally:
        library.close()
    from ep_mcp.tools import registry

    startup.prepare_tools()
    assert all(id(spec) in registry._VALIDATORS for spec in registry.tools())
