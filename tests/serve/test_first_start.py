"""A first ever start (no compiled model on this home): the handshake and the first, lexical
answers come before the one-time model compile, which runs behind them at low priority; two
servers on one pack embed it once. Ordering and counts decide here, never the wall clock
(`ep-mcp bench index --query` measures how fast)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from ep_mcp.index.buildlock import exclusive
from ep_mcp.index.embed import compiled

CLI = [sys.executable, "-c", "from ep_mcp.cli import main; main()"]


def _pack(make_pack: Any) -> Path:
    return make_pack(  # type: ignore[no-any-return]
        {
            f"topic{i}.md": f"# Topic {i}\n\nCompost needs greens, browns, air and water {i}.\n"
            for i in range(12)
        }
    )


async def _status(c: Client, slug: str) -> dict[str, Any]:
    got = await c.read_resource(f"ep://{slug}/status")
    return json.loads(got.contents[0].text)  # type: ignore[union-attr,no-any-return]


def test_a_first_start_answers_while_the_model_compile_is_still_held(
    make_pack: Any, tmp_path: Path
) -> None:
    """The test holds the models folder's compile lock: the compile cannot finish, yet the
    handshake, a status read and the first ep_search (lexical) are all answered."""
    root = _pack(make_pack)
    home = tmp_path / "home"
    models = home / "models"
    models.mkdir(parents=True)
    env = {**os.environ, "EP_MCP_HOME": str(home)}
    params = StdioServerParameters(
        command=CLI[0], args=[*CLI[1:], "serve", str(root), "--no-watch"], env=env
    )
    seen: dict[str, Any] = {}

    async def go() -> None:
        with anyio.fail_after(120):
            async with Client(params) as c:
                r = await c.call_tool("ep_search", {"query": "compost greens"})
                assert not r.is_error, r.content
                seen["mode"] = r.structured_content["mode"]  # type: ignore[index]
                seen["compiled"] = sorted(p.name for p in models.glob("*.onnx"))
                seen["phase"] = (await _status(c, "pack"))["phase"]

    with exclusive(models / compiled.LOCK_NAME):  # the compile waits for the test
        anyio.run(go)
    assert seen["compiled"] == [], "the model was compiled before the first answer"
    assert seen["mode"] == "lexical" and seen["phase"] in ("lexical", "embedding")
    assert not [p for p in models.iterdir() if p.name.startswith(".minilm")]  # no temp left


def test_the_compile_child_runs_at_low_priority_and_builds_the_graph(tmp_path: Path) -> None:
    """The child that compiles lowers itself to nice 19 before its work (every thread it
    then starts, onnxruntime's too, inherits it) and leaves a verified graph."""
    probe = (
        "import os, runpy, sys\n"
        "from ep_mcp.index.embed import compiled, local\n"
        "real = local.build_optimised\n"
        "def build(folder):\n"
        "    sys.stderr.write(f'nice={os.getpriority(os.PRIO_PROCESS, 0)}\\n')\n"
        "    return real(folder)\n"
        "local.build_optimised = build\n"
        "sys.exit(compiled.main(sys.argv[1:]))\n"
    )
    folder = tmp_path / "models"
    done = subprocess.run(
        [sys.executable, "-c", probe, str(folder)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    assert "nice=19" in done.stderr
    assert compiled.is_built(folder)


def test_a_failed_compile_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder", encoding="utf-8")
    with pytest.raises(Exception, match="the model compile failed"):
        compiled.compile_behind(tmp_path / "file" / "models")
