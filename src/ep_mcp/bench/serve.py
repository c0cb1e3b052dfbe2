"""`ep-mcp bench serve`: a bounded loopback load test of a real `ep-mcp serve` process.

The server runs as a subprocess (so load generator and server do not share a GIL); N
concurrent clients send `GET /search`, then MCP `tools/call ep_search` (JSON-RPC over
Streamable HTTP), each phase for a fixed time. Reports requests/s, p50/p95/p99, errors and the
server's CPU time per request (from /proc, summed over its worker processes): on a shared
machine latency follows the neighbours' load, CPU per request much less.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx2

from ep_mcp.errors import EpMcpError
from ep_mcp.eval.metrics import percentile

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
WARMUP_SECONDS = 2.0  # each route is loaded this long, unmeasured, before its phase
MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2025-06-18",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Connection:
    """One keep-alive HTTP/1.1 connection: a lean closed-loop client (the load generator
    shares the CPUs with the server, so each request should cost it as little as possible)."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(
        self, method: str, target: str, body: bytes = b"", headers: str = ""
    ) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        head = (
            f"{method} {target} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n{headers}"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        try:
            self.writer.write(head.encode("latin-1") + body)
            raw = await self.reader.readuntil(b"\r\n\r\n")
            lines = raw.decode("latin-1").split("\r\n")
            status = int(lines[0].split(" ", 2)[1])
            fields = {
                k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])
            }
            if "content-length" in fields:
                data = await self.reader.readexactly(int(fields["content-length"]))
            else:
                data = await self._chunked()
        except (OSError, asyncio.IncompleteReadError, ValueError, IndexError):
            await self.close()
            raise
        if fields.get("connection", "").lower() == "close":
            await self.close()
        return status, data

    async def _chunked(self) -> bytes:
        assert self.reader is not None
        parts: list[bytes] = []
        while True:
            size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                await self.reader.readuntil(b"\r\n")
                return b"".join(parts)
            parts.append(await self.reader.readexactly(size))
            await self.reader.readexactly(2)

    async def close(self) -> None:
        writer, self.writer, self.reader = self.writer, None, None
        if writer is not None:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()


Request = Callable[[Connection, int], Awaitable[bool]]
CpuClock = Callable[[], float | None]  # CPU seconds the server has used so far (None: unknown)


def _ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def server_cpu(pid: int) -> CpuClock:
    """A clock of the CPU seconds used by ``pid`` and its live descendants (Linux /proc)."""
    hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def family() -> list[int]:
        parents: dict[int, int] = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError, IndexError, ValueError):
                    stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                    parents[int(entry.name)] = int(stat[1])
        found, todo = [pid], [pid]
        while todo:
            parent = todo.pop()
            children = [p for p, pp in parents.items() if pp == parent]
            found += children
            todo += children
        return found

    def clock() -> float | None:
        if not Path(f"/proc/{pid}/stat").exists():
            return None
        total = 0
        for p in family():
            with contextlib.suppress(OSError, IndexError, ValueError):
                total += _ticks(p)
        return total / hz

    return clock


async def _phase(
    host: str, port: int, clients: int, seconds: float, one: Request, cpu: CpuClock = lambda: None
) -> dict[str, Any]:
    latencies: list[float] = []
    errors = 0
    reasons: list[str] = []
    deadline = time.monotonic() + seconds

    async def worker(wid: int) -> None:
        nonlocal errors
        conn = Connection(host, port)
        i = wid
        try:
            while time.monotonic() < deadline:
                started = time.perf_counter()
                try:
                    ok = await asyncio.wait_for(one(conn, i), 30)
                except (
                    OSError,
                    asyncio.IncompleteReadError,
                    ValueError,
                    IndexError,
                    TimeoutError,
                ) as exc:
                    ok = False
                    reasons.append(f"{type(exc).__name__}: {exc}"[:200])
                    await conn.close()
                if not ok and len(reasons) < errors + 1:
                    reasons.append("unexpected response")
                latencies.append((time.perf_counter() - started) * 1000)
                errors += 0 if ok else 1
                i += clients
        finally:
            await conn.close()

    started, cpu_before = time.monotonic(), cpu()
    await asyncio.gather(*(worker(w) for w in range(clients)))
    elapsed, cpu_after = time.monotonic() - started, cpu()
    cpu_ms = None
    if cpu_before is not None and cpu_after is not None and latencies:
        cpu_ms = round((cpu_after - cpu_before) * 1000 / len(latencies), 2)
    return {
        "requests": len(latencies),
        "errors": errors,
        "rps": round(len(latencies) / elapsed, 1),
        "p50_ms": round(percentile(latencies, 50), 1),
        "p95_ms": round(percentile(latencies, 95), 1),
        "p99_ms": round(percentile(latencies, 99), 1),
        "max_ms": round(max(latencies, default=0.0), 1),
        "server_cpu_ms_per_request": cpu_ms,
        "first_error": reasons[0] if reasons else None,
    }


async def _load(
    host: str, port: int, slug: str, clients: int, seconds: float, cpu: CpuClock
) -> dict[str, Any]:
    targets = ["/search?" + urlencode({"q": q, "pack": slug, "n": 10}) for q in QUERIES]
    mcp_headers = "".join(f"{k}: {v}\r\n" for k, v in MCP_HEADERS.items())

    async def search(conn: Connection, i: int) -> bool:
        status, data = await conn.request("GET", targets[i % len(targets)])
        return status == 200 and json.loads(data).get("results") is not None

    async def mcp(conn: Connection, i: int) -> bool:
        body = {
            "jsonrpc": "2.0",
            "id": i,
            "method": "tools/call",
            "params": {
                "name": "ep_search",
                "arguments": {"query": QUERIES[i % len(QUERIES)], "max_results": 10},
            },
        }
        status, data = await conn.request(
            "POST", f"/packs/{slug}/mcp", json.dumps(body).encode(), mcp_headers
        )
        if status != 200:
            return False
        result = json.loads(data).get("result")
        return isinstance(result, dict) and not result.get("isError")

    await _phase(host, port, clients, min(WARMUP_SECONDS, seconds), search)  # not reported
    await _phase(host, port, clients, min(WARMUP_SECONDS, seconds), mcp)
    return {
        "search": await _phase(host, port, clients, seconds, search, cpu),
        "mcp_ep_search": await _phase(host, port, clients, seconds, mcp, cpu),
    }


def run_bench(
    packs: Sequence[Path],
    env: Mapping[str, str],
    *,
    clients: int = 32,
    seconds: float = 30.0,
    provider: str = "hashing",
    workers: int = 1,
) -> dict[str, Any]:
    """Start `ep-mcp serve --transport http` on a free loopback port and load it; ``env`` is
    the server process's environment."""
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
        "--workers",
        str(workers),
    ]
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=dict(env))
        try:
            slug = _wait_ready(proc, base, log)
            cpu = server_cpu(proc.pid)
            load_before = _loadavg()
            report = asyncio.run(_load("127.0.0.1", port, slug, clients, seconds, cpu))
            report["load_average"] = [load_before, _loadavg()]
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
        "workers": workers,
        "pack": slug,
        "cpus": os.cpu_count(),
        **report,
    }


def _loadavg() -> float | None:
    try:
        return round(os.getloadavg()[0], 1)
    except OSError:
        return None


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
        f"pack {report['pack']}, provider {report['provider']}, "
        f"{report.get('workers', 1)} server worker(s), {report['cpus']} CPUs, "
        f"load average {' -> '.join(str(x) for x in report.get('load_average', []))}",
        f"{'route':<16}{'requests':>10}{'errors':>8}{'req/s':>9}{'p50':>8}{'p95':>8}"
        f"{'p99':>8}{'max':>8}{'cpu/req':>9}  (ms)",
    ]
    for name in ("search", "mcp_ep_search"):
        r = report[name]
        cpu = r.get("server_cpu_ms_per_request")
        lines.append(
            f"{name:<16}{r['requests']:>10}{r['errors']:>8}{r['rps']:>9}"
            f"{r['p50_ms']:>8}{r['p95_ms']:>8}{r['p99_ms']:>8}{r['max_ms']:>8}"
            f"{'-' if cpu is None else cpu:>9}"
        )
    s_p99, m_p99 = report["search"]["p99_ms"], report["mcp_ep_search"]["p99_ms"]
    if s_p99:
        lines.append(f"MCP p99 / search p99: {m_p99 / s_p99:.2f}")
    for name in ("search", "mcp_ep_search"):
        if report[name].get("first_error"):
            lines.append(f"first error on {name}: {report[name]['first_error']}")
    return "\n".join(lines)
