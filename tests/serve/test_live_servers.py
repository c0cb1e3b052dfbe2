"""Real servers: `ep-mcp serve` over stdio (two packs) and over HTTP on a real uvicorn."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from conftest import wait_healthy

CLI = [sys.executable, "-c", "from ep_mcp.cli import main; main()"]


async def exercise(c: Client, pack: str | None) -> None:
    """List and call every tool, read every resource kind, get a prompt."""
    extra = {"pack": pack} if pack else {}
    tools = {t.name for t in (await c.list_tools()).tools}
    assert tools == {"ep_search", "ep_read", "ep_list_topics", "ep_graph_traverse"}
    for name, args in [
        ("ep_search", {"query": "admin port"}),
        ("ep_read", {"path": "concepts/routing.md", "section": "Setup"}),
        ("ep_list_topics", {}),
        ("ep_graph_traverse", {"file_path": "concepts/routing.md", "depth": 2}),
    ]:
        r = await c.call_tool(name, {**args, **extra})
        assert not r.is_error, (name, r.content)
    for uri in [
        "ep://alpha/manifest",
        "ep://alpha/authority",
        "ep://alpha/files",
        "ep://alpha/file/overview.md",
        "skill://alpha/SKILL.md",
        "skill://alpha/concepts/ports.md",
    ]:
        assert (await c.read_resource(uri)).contents
    prompts = [p.name for p in (await c.list_prompts()).prompts]
    got = await c.get_prompt(prompts[0], {"question": "link down"})
    assert "link down" in got.messages[0].content.text  # type: ignore[union-attr]


def test_stdio_subprocess_serves_two_packs(packs: dict[str, Path]) -> None:
    params = StdioServerParameters(
        command=CLI[0],
        args=[
            *CLI[1:],
            "serve",
            str(packs["alpha"]),
            str(packs["beta"]),
            "--provider",
            "hashing",
            "--no-watch",
        ],
        env=dict(os.environ),
    )

    async def go() -> None:
        with anyio.fail_after(60):
            async with Client(params) as c:
                assert c.protocol_version == "2026-07-28"
                await exercise(c, "alpha")
                r = await c.call_tool("ep_search", {"query": "tomatoes", "pack": "beta"})
                assert r.structured_content["results"][0]["source_file"] == "gardening.md"

    anyio.run(go)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def http_server(
    packs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path]]:
    tmp_path = tmp_path_factory.mktemp("server")
    config = tmp_path / "config.yaml"
    config.write_text(
        f"packs:\n  - path: {packs['alpha']}\n    api_keys: [sk-alpha]\n"
        f"  - path: {packs['beta']}\n    slug: beta\n"
        "embedding:\n  provider: hashing\nserver:\n  watch: false\n",
        encoding="utf-8",
    )
    port = free_port()
    log = tmp_path / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            # no --transport: `serve --config` speaks HTTP, as the reference's README has it
            [*CLI, "serve", "--config", str(config), "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "EP_MCP_HOME": str(tmp_path / "home")},
        )
        base = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(base, proc, log, 60)
            yield base, log
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover
                proc.kill()
                proc.wait(timeout=10)


def _client(url: str, key: str | None, mode: str) -> Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    http = httpx2.AsyncClient(headers=headers, timeout=30)
    return Client(streamable_http_client(url, http_client=http), mode=mode)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_http_uvicorn_serves_mcp_per_pack_and_for_all(http_server: Any, mode: str) -> None:
    base, log = http_server

    async def go() -> None:
        with anyio.fail_after(60):
            async with _client(f"{base}/packs/alpha/mcp", "sk-alpha", mode) as c:
                assert c.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
                await exercise(c, None)
            async with _client(f"{base}/mcp", "sk-alpha", mode) as c:
                await exercise(c, "alpha")
                r = await c.call_tool("ep_search", {"query": "compost", "pack": "beta"})
                assert not r.is_error

    anyio.run(go)
    r = httpx2.get(f"{base}/search", params={"q": "compost", "pack": "beta"})
    assert r.status_code == 200 and r.json()["results"]
    r = httpx2.get(
        f"{base}/search",
        params={"q": "port", "pack": "alpha"},
        headers={"Authorization": "Bearer sk-wrong"},
    )
    assert r.status_code == 401
    r = httpx2.get(f"{base}/health", headers={"Host": "evil.example.com"})
    assert r.status_code == 421
    assert "sk-alpha" not in log.read_text() and "sk-wrong" not in log.read_text()


def test_two_http_workers_serve_one_port_from_the_same_settings(
    packs: dict[str, Path], tmp_path: Path
) -> None:
    home = tmp_path / "home"
    env = {**os.environ, "EP_MCP_HOME": str(home)}
    args = [str(packs["beta"]), "--provider", "hashing"]
    subprocess.run([*CLI, "index", *args], env=env, check=True, capture_output=True)
    port = free_port()
    log = tmp_path / "workers.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*CLI, "serve", *args, "--transport", "http", "--port", str(port), "--workers", "2"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
        try:
            wait_healthy(f"http://127.0.0.1:{port}", proc, log, 60)
            r = httpx2.get(f"http://127.0.0.1:{port}/search?q=compost", timeout=10)
            assert r.json()["results"][0]["source_file"] == "compost.md"
            assert f"on http://127.0.0.1:{port}" in log.read_text()
        finally:
            proc.terminate()
            proc.wait(timeout=20)


def test_http_workers_with_the_local_model_serve_a_pack_built_whole(
    packs: dict[str, Path], tmp_path: Path
) -> None:
    """Workers have no backfill: their parent builds the vectors in before they start, so the
    first answers are hybrid and nothing stays pending."""
    env = {**os.environ, "EP_MCP_HOME": str(tmp_path / "home")}
    port = free_port()
    log = tmp_path / "workers.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*CLI, "serve", str(packs["beta"]), "--transport", "http", "--port", str(port),
             "--workers", "2", "--index-dir", str(tmp_path / "idx")],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )  # fmt: skip
        try:
            wait_healthy(f"http://127.0.0.1:{port}", proc, log, 120)
            r = httpx2.get(f"http://127.0.0.1:{port}/health", timeout=10)
            assert r.json()["index"]["pending"] == 0, r.json()
            assert r.json()["index"]["phase"] == "ready", r.json()
            found = httpx2.get(f"http://127.0.0.1:{port}/search?q=compost", timeout=10).json()
            assert found["mode"] == "hybrid" and found["results"], found
        finally:
            proc.terminate()
            proc.wait(timeout=20)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_port_in_use_is_one_line_and_exit_1_before_any_index_file(
    packs: dict[str, Path], tmp_path: Path, workers: str
) -> None:
    """With several workers the parent builds the whole index before they start: the port
    is checked before that, so nothing is built for a server that cannot listen."""
    index_dir = tmp_path / "index"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run(
            [
                *CLI,
                "serve",
                str(packs["beta"]),
                "--provider",
                "hashing",
                "--transport",
                "http",
                "--port",
                str(port),
                "--no-watch",
                "--workers",
                workers,
                "--index-dir",
                str(index_dir),
            ],
            env={**os.environ, "EP_MCP_HOME": str(tmp_path / "home")},
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 1, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and f"port {port} is in use" in lines[0], result.stderr
    assert "pick another with --port" in lines[0]
    assert not index_dir.exists() or not list(index_dir.rglob("*")), list(index_dir.rglob("*"))


def test_sigterm_stops_a_stdio_server_as_ctrl_c_does(
    packs: dict[str, Path], tmp_path: Path
) -> None:
    """A desktop host may stop its server with SIGTERM: the server closes its packs (the
    start-up build finishes the pack under way) and exits 0, as the HTTP server does."""
    import json
    import signal

    env = {**os.environ, "EP_MCP_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(
        [*CLI, "serve", str(packs["beta"]), "--provider", "hashing"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    }
    proc.stdin.write((json.dumps(hello) + "\n").encode())
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 1  # it is serving
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err.decode()
    assert "ep-mcp: stopped" in err.decode() and "Traceback" not in err.decode()
