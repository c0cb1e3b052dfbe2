"""`ep-mcp bench reliability`: what faults cost a running service, measured.

- **fifo**: search latency while reconstruct searches hit a FIFO swapped into the pack, against
  the same load on a regular file (the live read must never block);
- **damage**: each way an index file gets damaged → time to detect, rebuild and answer, and
  whether the answers equal a clean build's;
- **provider**: an HTTP embedding provider that answers 503 or hangs → the latency of each
  query in a row (lexical fallback within the deadline, ~0 once the circuit is open).

Everything runs on a small synthetic pack in a work folder, with the hashing embedder (fifo,
damage) or a local fake provider on 127.0.0.1 (provider).
"""

from __future__ import annotations

import http.server
import json
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import ClassVar

from ep_mcp.config.model import EmbeddingSpec, PackSettings, Settings
from ep_mcp.eval.metrics import percentile
from ep_mcp.json_types import JsonObject
from ep_mcp.library.opening import open_library
from ep_mcp.library.runtime import Library
from ep_mcp.retrieval.types import SearchRequest

Report = JsonObject  # the bench's JSON report


def write_pack(root: Path, files: int = 60) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        (root / f"note{i}.md").write_text(
            f"# Note {i}\n\nRouters and ports, number {i}. Compost and tomatoes {i % 7}.\n\n"
            f"## Setup\n\nOpen port {8000 + i} on the router.\n",
            encoding="utf-8",
        )
    return root


def _library(pack: Path, home: Path, spec: EmbeddingSpec) -> Library:
    settings = Settings(packs=(PackSettings(path=pack),), embedding=spec, home=home)
    return open_library(settings, home)


def _latencies(lib: Library, n: int, attackers: int = 0) -> list[float]:
    """``n`` searches, timed, while ``attackers`` threads run reconstruct searches on note 3."""
    rt = lib.get()
    stop = threading.Event()

    def attack() -> None:
        while not stop.is_set():
            rt.search(SearchRequest(query="note 3 routers ports", k=5, reconstruct=True))
            stop.wait(0.02)

    out = []
    with ThreadPoolExecutor(max(1, attackers)) as pool:
        for _ in range(attackers):
            pool.submit(attack)
        try:
            for i in range(n):
                started = time.perf_counter()
                rt.search(SearchRequest(query=f"open port {8000 + i % 60} setup", k=5))
                out.append((time.perf_counter() - started) * 1000)
        finally:
            stop.set()
    return out


def _summary(ms: list[float]) -> dict[str, float]:
    return {"p50_ms": round(percentile(ms, 50), 2), "p99_ms": round(percentile(ms, 99), 2)}


def bench_fifo(work: Path, searches: int = 400) -> Report:
    pack = write_pack(work / "fifo-pack")
    lib = _library(pack, work / "home-fifo", EmbeddingSpec(provider="hashing"))
    try:
        _latencies(lib, 50)
        quiet = _latencies(lib, searches)
        regular = _latencies(lib, searches, attackers=4)
        (pack / "note3.md").unlink()
        os.mkfifo(pack / "note3.md")
        fifo = _latencies(lib, searches, attackers=4)
    finally:
        lib.close()
    return {
        "searches": searches,
        "no reconstruct load": _summary(quiet),
        "4 reconstruct searchers, regular file": _summary(regular),
        "4 reconstruct searchers, FIFO": _summary(fifo),
    }


def _zero(path: Path, first: int, count: int, page: int = 4096) -> None:
    with path.open("r+b") as f:
        f.seek(first * page)
        f.write(b"\0" * page * count)


def _foreign(path: Path) -> None:
    import apsw

    path.unlink()
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)")
    conn.close()


DAMAGE: dict[str, Callable[[Path], object]] = {
    "zeroed header": lambda p: _zero(p, 0, 1),
    "zeroed middle pages": lambda p: _zero(p, p.stat().st_size // 4096 // 3, 4),
    "truncated to half": lambda p: os.truncate(p, p.stat().st_size // 2),
    "random bytes": lambda p: p.write_bytes(random.Random(7).randbytes(p.stat().st_size)),
    "empty file": lambda p: p.write_bytes(b""),
    "foreign sqlite database": _foreign,
}
QUERIES = ("open port 8003 setup", "compost tomatoes", "router number 17")


def _answers(lib: Library) -> list[list[str]]:
    rt = lib.get()
    return [[h.source_file for h in rt.search(SearchRequest(query=q, k=5)).hits] for q in QUERIES]


def bench_damage(work: Path) -> Report:
    pack = write_pack(work / "damage-pack")
    spec = EmbeddingSpec(provider="hashing")
    home = work / "home-damage"
    lib = _library(pack, home, spec)
    clean, path = _answers(lib), lib.get().sqlite.path
    lib.close()
    rows: Report = {}
    for name, damage in DAMAGE.items():
        damage(path)
        started = time.perf_counter()
        lib = _library(pack, home, spec)
        try:
            same = _answers(lib) == clean
        finally:
            lib.close()
        rows[name] = {"recovered_s": round(time.perf_counter() - started, 3), "same_answers": same}
    return rows


class _FakeProvider(http.server.BaseHTTPRequestHandler):
    """OpenAI-style embeddings while `state["mode"]` is "ok"; then 503s, or hangs."""

    state: ClassVar[dict[str, str]] = {"mode": "ok"}
    hang_s: ClassVar[float] = 5.0

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        mode = self.state["mode"]
        if mode == "ok":
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            data = [
                {"index": i, "embedding": _unit(t, int(body.get("dimensions") or 8))}
                for i, t in enumerate(texts)
            ]
            payload = json.dumps({"data": data}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        if mode == "hang":
            time.sleep(self.hang_s)
        self.send_response(503)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


def _unit(text: str, dim: int) -> list[float]:
    rng = random.Random(text)
    values = [rng.gauss(0.0, 1.0) for _ in range(dim)]
    norm = sum(v * v for v in values) ** 0.5 or 1.0
    return [v / norm for v in values]


@contextmanager
def _provider(state: dict[str, str]) -> Iterator[str]:
    handler = type("Handler", (_FakeProvider,), {"state": state})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def bench_provider(work: Path, queries: int = 6) -> Report:
    """Build with a working provider, then query while it answers 503 or hangs."""
    pack = write_pack(work / "provider-pack")
    rows: Report = {}
    for mode in ("503", "hang"):
        state = {"mode": "ok"}
        with _provider(state) as url:
            spec = EmbeddingSpec(
                provider="openai", endpoint=url, dimension=8, retries=0, api_key="sk-bench"
            )
            settings = Settings(
                packs=(PackSettings(path=pack),), embedding=spec, home=work / f"home-{mode}"
            )
            lib = open_library(settings, work / f"home-{mode}")
            try:
                rt, took, modes = lib.get(), [], set()
                state["mode"] = mode
                for i in range(queries):
                    started = time.perf_counter()
                    result = rt.search(SearchRequest(query=f"router port {i}", k=5))
                    took.append(round((time.perf_counter() - started) * 1000, 1))
                    modes.add(result.mode)
            finally:
                lib.close()
        rows[mode] = {"query_ms_in_order": took, "modes": sorted(modes)}
    return rows


def run_reliability(work: Path, parts: tuple[str, ...]) -> Report:
    work.mkdir(parents=True, exist_ok=True)
    out: Report = {}
    if "fifo" in parts:
        out["fifo"] = bench_fifo(work)
    if "damage" in parts:
        out["damage"] = bench_damage(work)
    if "provider" in parts:
        out["provider"] = bench_provider(work)
    return out


def render(report: Report) -> str:
    lines = []
    for part, rows in report.items():
        lines.append(f"== {part}")
        assert isinstance(rows, dict)
        for name, row in rows.items():
            lines.append(f"  {name}: {row}")
    return "\n".join(lines)
