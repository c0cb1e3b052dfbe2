"""A `subscriptions/listen` stream opened with an access token ends when the token does
(attack pass): before, a stream opened with a token good for a few seconds went on telling of
a protected pack's changes for as long as the client held the connection. A real Authlib
authorization server and a real `ep-mcp serve --watch` on uvicorn, both on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import SubscriptionLost

from conftest import wait_healthy
from ep_mcp.serve.oauth import Rejected
from oauth_as import AuthServer, free_port, serving

CLI = [sys.executable, "-c", "from ep_mcp.cli import main; main()"]
OVERVIEW = "ep://alpha/file/overview.md"


@pytest.fixture
def stack(packs: dict[str, Path], tmp_path: Path) -> Iterator[dict[str, Any]]:
    port, as_port = free_port(), free_port()
    base = f"http://127.0.0.1:{port}"
    auth = AuthServer(resource=base)
    auth.base = f"http://127.0.0.1:{as_port}"
    config = tmp_path / "config.yaml"
    config.write_text(
        f"packs:\n  - path: {packs['alpha']}\n"
        "embedding:\n  provider: hashing\n"
        "server:\n  auth:\n"
        f"    issuers: ['{auth.issuer}']\n    resource: '{base}'\n    clock_skew_s: 0\n",
        encoding="utf-8",
    )
    log = tmp_path / "server.log"
    with serving(auth.app(), as_port), log.open("wb") as out:
        env = {**os.environ, "EP_MCP_HOME": str(tmp_path / "home")}
        proc = subprocess.Popen(
            [*CLI, "serve", "--config", str(config), "--port", str(port), "--watch"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
        try:
            wait_healthy(base, proc, log, 60)
            yield {"base": base, "auth": auth, "log": log}
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover
                proc.kill()
                proc.wait(timeout=10)


def client(url: str, token: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    return Client(streamable_http_client(url, http_client=http))


def test_a_listen_stream_ends_when_its_token_expires(stack: dict[str, Any]) -> None:
    auth: AuthServer = stack["auth"]
    base = stack["base"]
    short = auth.sign(auth.claims("ep:pack:alpha", exp=int(time.time()) + 5))
    long = auth.sign(auth.claims("ep:pack:alpha"))

    async def go() -> None:
        async with (
            client(f"{base}/mcp", long) as steady,
            steady.listen(resource_subscriptions=[OVERVIEW]),
            client(f"{base}/mcp", short) as c,
            c.listen(resource_subscriptions=[OVERVIEW]) as sub,
        ):
            # bounded: without the fix the stream stays open (nothing is ever edited here)
            with anyio.fail_after(60), pytest.raises((StopAsyncIteration, SubscriptionLost)):
                await sub.__anext__()
            # the server goes on answering, and a stream of a live token stays open
            assert (await steady.read_resource(OVERVIEW)).contents
        r = httpx2.get(f"{base}/health")
        assert r.status_code == 200

    anyio.run(go)
    log = stack["log"].read_text(encoding="utf-8")
    assert "without completing response" not in log and "Traceback" not in log, log


def test_a_grant_ends_when_the_token_stops_being_accepted() -> None:
    """What bounds a listen stream: a JWT's `exp` + skew; an introspected token's answer
    no longer than it may be reused from when it was asked (not from its reuse), or its `exp`."""
    from serve.test_oauth_verifier import ISSUER, RESOURCE, T0, Clock, Introspector, introspecting

    endpoint, clock = Introspector(), Clock(T0)
    v = introspecting(endpoint, clock, introspection_ttl_s=60, clock_skew_s=5)
    answer = {"active": True, "iss": ISSUER, "aud": RESOURCE, "scope": "ep:pack:a", "exp": T0 + 999}
    endpoint.answers["opaque"] = answer
    endpoint.answers["short"] = {**answer, "exp": T0 + 70}
    first = v.verify("opaque", [RESOURCE])
    assert not isinstance(first, Rejected) and first.until == T0 + 60
    clock.now = T0 + 50  # the kept answer, asked at T0: trusted until T0 + 60, not T0 + 110
    again = v.verify("opaque", [RESOURCE])
    assert not isinstance(again, Rejected) and again.until == T0 + 60 and endpoint.asked == 1
    short = v.verify("short", [RESOURCE])
    assert not isinstance(short, Rejected) and short.until == T0 + 75
