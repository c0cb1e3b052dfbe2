"""`ep-mcp bench serve`: a bounded loopback load test of a real `ep-mcp serve` process.

The server runs as a subprocess (so load generator and server do not share a GIL); N
concurrent clients send `GET /search`, then MCP `tools/call ep_search` (JSON-RPC over
Streamable HTTP), each phase for a fixed time. Reports requests/s, p50/p95/p99 and errors.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import httpx2

from ep_mcp.errors import EpMcpError

QUERIES = (
    "how do I install it",
    "serve over http",
    "configure api keys",
    "hybrid retrieval",
    "what is an expertpack",
    "troubleshooting lexical only mode",
    "claude desktop setup",
    "requires expansion",
    "index location",
    "skills hub tap",
)
MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2025-06-18",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


async def _phase(
    clients: int, seconds: float, one: Callable[[httpx2.AsyncClient, int], Awaitable[bool]]
) -> dict[str, Any]:
    latencies: list[float] = []
    errors = 0
    deadline = time.monotonic() + seconds
    limits = httpx2.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def worker(wid: int, client: httpx2.AsyncClient) -> None:
        nonlocal errors
        i = wid
        while time.monotonic() < deadline:
            started = time.perf_counter()
            try:
                ok = await one(client, i)
            except httpx2.HTTPError:
                ok = False
            latencies.append((time.perf_counter() - started) * 1000)
            errors += 0 if ok else 1
            i += clients

    started = time.monotonic()
    async with httpx2.AsyncClient(limits=limits, timeout=30) as client:
        await asyncio.gather(*(worker(w, client) for w in range(clients)))
    elapsed = time.monotonic() - started
    return {
        "requests": len(latencies),
        "errors": errors,
        "rps": round(len(latencies) / elapsed, 1),
        "p50_ms": round(_percentile(latencies, 50), 1),
        "p95_ms": round(_percentile(latencies, 95), 1),
        "p99_ms": round(_percentile(latencies, 99), 1),
        "max_ms": round(max(latencies, default=0.0), 1),
    }


async def _load(base: str, slug: str, clients: int, seconds: float) -> dict[str, Any]:
    async def search(client: httpx2.AsyncClient, i: int) -> bool:
        r = await client.get(
            f"{base}/search", params={"q": QUERIES[i % len(QUERIES)], "pack": slug, "n": 10}
        )
        return r.status_code == 200 and bool(r.json().get("results") is not None)

    async def mcp(client: httpx2.AsyncClient, i: int) -> bool:
        body = {
            "jsonrpc": "2.0",
            "id": i,
            "method": "tools/call",
            "params": {
                "name": "ep_search",
                "arguments": {"query": QUERIES[i % len(QUERIES)], "max_results": 10},
            },
        }
        r = await client.post(f"{base}/packs/{slug}/mcp", json=body, headers=MCP_HEADERS)
        if r.status_code != 200:
            return False
        result = r.json().get("result")
        return isinstance(result, dict) and not result.get("isError")

    return {
        "search": await _phase(clients, seconds, search),
        "mcp_ep_search": await _phase(clients, seconds, mcp),
    }


def run_bench(
    packs: Sequence[Path], *, clients: int = 32, seconds: float = 30.0, provider: str = "hashing"
) -> dict[str, Any]:
    """Start `ep-mcp serve --transport http` on a free loopback port and load it."""
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    cmd = [
        sys.executable,
        "-c",
        "from ep_mcp.cli import main; main()",
        "serve",
        *[str(p) for p in packs],
        "--transport",
        "http",
        "--port",
        str(port),
        "--provider",
        provider,
        "--no-watch",
    ]
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ))
        try:
            slug = _wait_ready(proc, base, log)
            report = asyncio.run(_load(base, slug, clients, seconds))
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
    return {
        "clients": clients,
        "seconds_per_phase": seconds,
        "provider": provider,
        "pack": slug,
        "cpus": os.cpu_count(),
        **report,
    }


def _wait_ready(proc: subprocess.Popen[bytes], base: str, log: Any) -> str:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            tail = log.read().decode("utf-8", "replace")[-2000:]
            raise EpMcpError(f"the server exited before it was ready:\n{tail}")
        try:
            r = httpx2.get(f"{base}/packs", timeout=1)
            if r.status_code == 200:
                return str(r.json()["packs"][0]["slug"])
        except httpx2.HTTPError:
            pass
        time.sleep(0.2)
    raise EpMcpError("the server did not start within 120 s")


def render(report: dict[str, Any]) -> str:
    lines = [
        f"{report['clients']} clients x {report['seconds_per_phase']:.0f} s per phase, "
        f"pack {report['pack']}, provider {report['provider']}, {report['cpus']} CPUs",
        f"{'route':<16}{'requests':>10}{'errors':>8}{'req/s':>9}{'p50':>8}{'p95':>8}"
        f"{'p99':>8}{'max':>8}  (ms)",
    ]
    for name in ("search", "mcp_ep_search"):
        r = report[name]
        lines.append(
            f"{name:<16}{r['requests']:>10}{r['errors']:>8}{r['rps']:>9}"
            f"{r['p50_ms']:>8}{r['p95_ms']:>8}{r['p99_ms']:>8}{r['max_ms']:>8}"
        )
    return "\n".join(lines)
