"""Three `ep-mcp serve` replicas behind a real nginx: kill -9 one, publish a new artifact.

The nginx routing and retry rules are the shipped ones (deploy/nginx/), included verbatim;
only the replicas' loopback ports are rewritten. 32 clients call read-only routes (GET
/search, MCP tools/call over POST /packs/{slug}/mcp) for `EP_MCP_REPLICA_SECONDS` (30 s).
Mid-run one replica is killed with SIGKILL and a new version of pack "alpha" is published;
not one client request may fail, and the answers switch to the new version within one poll
interval. The figures are printed, written to the test's folder and, when
`EP_MCP_REPLICA_REPORT` names a file, there too (.ci/run prints it).
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NGINX_DIR = REPO / "deploy" / "nginx"
SECONDS = float(os.environ.get("EP_MCP_REPLICA_SECONDS", "30"))
CLIENTS = 32
POLL_S = 1.0
NEW_WORD = "quokkazebra"
EP_MCP = Path(sys.executable).parent / "ep-mcp"

ALPHA = {
    "manifest.yaml": "slug: alpha\nname: Garden notes\ntype: product\n",
    "tomatoes.md": "# Growing tomatoes\n\nTomatoes need full sun, deep watering and a stake.\n",
    "compost.md": "# Making compost\n\nMix green and brown material; turn the heap monthly.\n",
}
BETA = {
    "manifest.yaml": "slug: beta\nname: Bee notes\ntype: product\n",
    "bees.md": "# Bees\n\nPollinators such as bumblebees visit lavender and borage.\n",
    "hives.md": "# Hives\n\nA hive needs a dry, sheltered spot facing the morning sun.\n",
}


def _nginx() -> str | None:
    return shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(p, os.X_OK)), None
    )


pytestmark = [
    pytest.mark.replicas,  # not in the default run: `pytest -m replicas` (.ci/run runs it)
    pytest.mark.skipif(
        _nginx() is None, reason="nginx is not installed (apt-get install nginx; .ci/run does)"
    ),
]


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def _publish(pack: Path, out: Path, env: dict[str, str]) -> None:
    subprocess.run(
        [str(EP_MCP), "index", str(pack), "--out", str(out), "--provider", "hashing"],
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )


def _get(port: int, path: str, timeout: float = 2.0) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def _wait_healthy(port: int, proc: subprocess.Popen[bytes] | None, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"process on port {port} exited: {log.read_text()[-2000:]}")
        try:
            if _get(port, "/health", timeout=1)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"nothing healthy on port {port} within 60 s: {log.read_text()[-2000:]}")


def nginx_config(tmp: Path, listen: int, replica_ports: list[int]) -> Path:
    """The shipped upstreams (ports rewritten) and routes (verbatim) in a loopback server."""
    upstreams = (NGINX_DIR / "ep-mcp-upstreams.conf").read_text()
    for shipped, port in zip((8001, 8002, 8003), replica_ports, strict=True):
        upstreams = upstreams.replace(f"127.0.0.1:{shipped} ", f"127.0.0.1:{port} ")
    assert re.search(r"127\.0\.0\.1:800[123] ", upstreams) is None
    (tmp / "upstreams.conf").write_text(upstreams)
    for sub in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (tmp / sub).mkdir(exist_ok=True)
    user = "user root;\n" if os.geteuid() == 0 else ""
    conf = tmp / "nginx.conf"
    conf.write_text(
        f"""{user}daemon off;
worker_processes 2;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    log_format replica '$status $upstream_addr $upstream_status $request_time';
    access_log {tmp}/access.log replica;
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    include {tmp}/upstreams.conf;
    server {{
        listen 127.0.0.1:{listen};
        include {NGINX_DIR}/ep-mcp-routes.conf;
    }}
}}
"""
    )
    return conf


@dataclass
class Tally:
    """What the clients saw (appended from many threads; list.append is atomic)."""

    latencies: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    probes: list[tuple[float, bool]] = field(default_factory=list)  # (asked at, new answer?)


def _mcp(tool: str, arguments: dict[str, object]) -> bytes:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}  # fmt: skip
    return json.dumps(body).encode()


WORKLOAD: list[tuple[str, str, bytes | None]] = [
    ("GET", "/search?q=compost+heap&pack=alpha&n=3", None),
    ("POST", "/packs/beta/mcp", _mcp("ep_search", {"query": "bees lavender", "max_results": 3})),
    ("GET", f"/search?q={NEW_WORD}&pack=alpha&n=3", None),  # the probe: old or new version?
    ("POST", "/packs/alpha/mcp", _mcp("ep_read", {"path": "compost.md"})),
    ("GET", "/search?q=sheltered+hive&pack=beta&n=3", None),
    ("POST", "/packs/alpha/mcp", _mcp("ep_search", {"query": "tomatoes sun"})),
    ("GET", "/packs", None),
]
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def _client(port: int, stop: threading.Event, tally: Tally, offset: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    i = offset
    while not stop.is_set():
        method, path, body = WORKLOAD[i % len(WORKLOAD)]
        i += 1
        started = time.monotonic()
        try:
            conn.request(method, path, body=body, headers=HEADERS if body else {})
            resp = conn.getresponse()
            data = resp.read()
        except (OSError, http.client.HTTPException) as exc:
            tally.failures.append(f"{method} {path}: {type(exc).__name__}: {exc}")
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            continue
        tally.latencies.append(time.monotonic() - started)
        problem = _problem(resp.status, path, data)
        if problem:
            tally.failures.append(f"{method} {path}: {problem}")
        elif NEW_WORD in path:
            tally.probes.append((started, "zebra.md" in data.decode()))  # when it was asked
    conn.close()


def _problem(status: int, path: str, data: bytes) -> str | None:
    if status != 200:
        return f"HTTP {status}: {data[:200]!r}"
    try:
        doc = json.loads(data)
    except ValueError:
        return f"not JSON: {data[:200]!r}"
    if path.endswith("/mcp") and ("error" in doc or doc["result"].get("isError")):
        return f"MCP error: {data[:200]!r}"
    return None


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[dict[str, object]]:
    env = {**os.environ, "EP_MCP_HOME": str(tmp_path / "home")}
    art = tmp_path / "artifacts"
    alpha = _write(tmp_path / "src" / "alpha", ALPHA)
    beta = _write(tmp_path / "src" / "beta", BETA)
    both = [threading.Thread(target=_publish, args=(p, art, env)) for p in (alpha, beta)]
    for t in both:
        t.start()
    for t in both:
        t.join(timeout=120)
    assert (art / "alpha" / "current").exists() and (art / "beta" / "current").exists()
    ports = _free_ports(4)
    replica_ports, nginx_port = ports[:3], ports[3]
    holds = [["alpha"], ["alpha", "beta"], ["alpha", "beta"]]  # as deploy/nginx routes them
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for n, (port, slugs) in enumerate(zip(replica_ports, holds, strict=True), start=1):
            config = tmp_path / f"replica{n}.yaml"
            config.write_text(
                json.dumps(
                    {
                        "server": {
                            "port": port,
                            "artifact_poll_s": POLL_S,
                            "forwarded_allow_ips": ["127.0.0.1"],
                        },
                        "embedding": {"provider": "hashing"},
                        "packs": [{"artifact": str(art / s)} for s in slugs],
                    }
                )
            )
            log = tmp_path / f"replica{n}.log"
            with log.open("wb") as out:
                procs.append(
                    subprocess.Popen(
                        [str(EP_MCP), "serve", "--config", str(config), "--transport", "http"],
                        env=env,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                    )
                )
        (tmp_path / "nginx").mkdir()
        conf = nginx_config(tmp_path / "nginx", nginx_port, replica_ports)
        nginx_bin = _nginx()
        assert nginx_bin is not None
        check = subprocess.run(
            [nginx_bin, "-t", "-c", str(conf), "-e", str(tmp_path / "nginx" / "error.log")],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert check.returncode == 0, check.stderr
        with (tmp_path / "nginx" / "stderr.log").open("wb") as out:
            procs.append(
                subprocess.Popen(
                    [nginx_bin, "-c", str(conf), "-e", str(tmp_path / "nginx" / "error.log")],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            )
        for n, (port, proc) in enumerate(zip(replica_ports, procs, strict=False), start=1):
            _wait_healthy(port, proc, tmp_path / f"replica{n}.log")
        _wait_healthy(nginx_port, procs[3], tmp_path / "nginx" / "error.log")
        yield {
            "env": env,
            "alpha": alpha,
            "artifacts": art,
            "procs": procs,
            "replica_ports": replica_ports,
            "nginx_port": nginx_port,
            "tmp": tmp_path,
        }
    finally:
        for proc in reversed(procs):  # nginx first: no new requests reach the replicas
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def _packs_versions(port: int) -> dict[str, str]:
    _status, body = _get(port, "/packs")
    return {p["slug"]: p["artifact_version"] for p in json.loads(body)["packs"]}


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def test_replicas_behind_nginx_survive_kill_9_and_switch_to_a_new_artifact(
    cluster: dict[str, object],
) -> None:
    env, alpha, art = cluster["env"], cluster["alpha"], cluster["artifacts"]
    procs = cluster["procs"]
    replica_ports = cluster["replica_ports"]
    tmp = cluster["tmp"]
    assert isinstance(alpha, Path) and isinstance(art, Path) and isinstance(tmp, Path)
    assert isinstance(procs, list) and isinstance(replica_ports, list) and isinstance(env, dict)
    nginx_port = int(str(cluster["nginx_port"]))
    tally, stop = Tally(), threading.Event()
    clients = [
        threading.Thread(target=_client, args=(nginx_port, stop, tally, i), daemon=True)
        for i in range(CLIENTS)
    ]
    started = time.monotonic()
    for t in clients:
        t.start()
    time.sleep(SECONDS * 0.3)
    killed_at = time.monotonic()
    os.kill(procs[1].pid, signal.SIGKILL)  # replica 2: holds alpha and beta
    procs[1].wait(timeout=10)
    time.sleep(max(0.0, started + SECONDS * 0.55 - time.monotonic()))
    (alpha / "zebra.md").write_text(f"# Zebras\n\nThe {NEW_WORD} grazes on the savanna.\n")
    publish_started = time.monotonic()
    _publish(alpha, art, env)
    published_at = time.monotonic()
    time.sleep(max(0.0, started + SECONDS - time.monotonic()))
    # then, by a bounded poll (it bounds a hang only; the speed is the report's, not the
    # test's): every live replica serves the new artifact, and the clients did real work
    current = os.readlink(art / "alpha" / "current")
    hang_bound = time.monotonic() + 120
    while time.monotonic() < hang_bound:
        live = [_packs_versions(replica_ports[n - 1]).get("alpha") for n in (1, 3)]
        if live == [current, current] and len(tally.latencies) > CLIENTS * 10:
            break
        time.sleep(0.2)
    switched_at = time.monotonic()
    time.sleep(POLL_S)  # probes asked from the switch on must all be new
    stop.set()
    for t in clients:
        t.join(timeout=40)
    elapsed = time.monotonic() - started

    access = (tmp / "nginx" / "access.log").read_text().splitlines()
    retried = sum(1 for line in access if ", " in line)  # $upstream_addr lists each try
    old = [t for t, new in tally.probes if not new]
    new = [t for t, new in tally.probes if new]
    last_old = (max(old) - published_at) if old else float("nan")
    first_new = (min(new) - published_at) if new else float("nan")
    versions = {n: _packs_versions(replica_ports[n - 1]) for n in (1, 3)}
    figures = (
        f"replicas: 3 behind nginx, {CLIENTS} clients, {elapsed:.1f} s\n"
        f"requests: {len(tally.latencies) + len(tally.failures)} "
        f"({len(tally.latencies) / elapsed:.0f}/s), failed: {len(tally.failures)}\n"
        f"latency: p50 {_quantile(tally.latencies, 0.5) * 1000:.1f} ms, "
        f"p99 {_quantile(tally.latencies, 0.99) * 1000:.1f} ms, "
        f"max {max(tally.latencies, default=0) * 1000:.1f} ms\n"
        f"failover: replica 2 killed (SIGKILL) at {killed_at - started:.1f} s; "
        f"{retried} request(s) retried by nginx on another replica, "
        f"{len(tally.failures)} failed\n"
        f"artifact swap: published at {published_at - started:.1f} s "
        f"(build {published_at - publish_started:.1f} s); last old answer "
        f"{last_old:+.2f} s, first new answer {first_new:+.2f} s after publishing "
        f"(poll interval {POLL_S:.1f} s); probes {len(old)} old, {len(new)} new\n"
    )
    print("\n" + figures)
    (tmp / "replicas.txt").write_text(figures)
    if os.environ.get("EP_MCP_REPLICA_REPORT"):
        Path(os.environ["EP_MCP_REPLICA_REPORT"]).write_text(figures)
    logs = f"logs: {tmp}/nginx/error.log, {tmp}/replica{{1,2,3}}.log"  # kept by pytest
    assert tally.failures == [], (tally.failures[:5], logs)
    assert len(tally.latencies) > CLIENTS * 10
    assert new, "no answer from the new version"
    # after every replica said it serves the new artifact, no answer is old
    assert not old or max(old) < switched_at, figures
    assert all(v["alpha"] == current for v in versions.values()), versions
