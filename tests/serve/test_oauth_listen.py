"""A listen stream opened with an access token ends when the token expires: a real
authorization server's signing key (tests/oauth_as.py) and a real `ep-mcp serve --watch` with
`server.auth` on uvicorn, the official SDK client."""

from __future__ import annotations

import os
import shutil
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
from mcp.client.subscriptions import ResourceUpdated, SubscriptionLost

from conftest import wait_healthy
from oauth_as import AuthServer, free_port, serving

CLI = [sys.executable, "-c", "from ep_mcp.cli import main; main()"]
GARDENING = "ep://beta/file/gardening.md"
SKEW_S = 30  # server.auth.clock_skew_s's default: a token is accepted this long past `exp`
LEFT_S = 10  # what the short token has left when it is made


@pytest.fixture
def stack(packs: dict[str, Path], tmp_path: Path) -> Iterator[dict[str, Any]]:
    beta = Path(shutil.copytree(packs["beta"], tmp_path / "beta", symlinks=True))
    port, as_port = free_port(), free_port()
    base = f"http://127.0.0.1:{port}"
    auth = AuthServer(resource=base)
    auth.base = f"http://127.0.0.1:{as_port}"
    config = tmp_path / "config.yaml"
    config.write_text(
        f"packs:\n  - path: {beta}\n    slug: beta\n"
        "embedding:\n  provider: hashing\n"
        f"server:\n  auth:\n    issuers: ['{auth.issuer}']\n    resource: '{base}'\n",
        encoding="utf-8",
    )
    log = tmp_path / "server.log"
    with serving(auth.app(), as_port), log.open("wb") as out:
        proc = subprocess.Popen(
            [*CLI, "serve", "--config", str(config), "--port", str(port), "--watch"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "EP_MCP_HOME": str(tmp_path / "home")},
        )
        try:
            wait_healthy(base, proc, log, 60)
            yield {"base": base, "auth": auth, "beta": beta}
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover
                proc.kill()
                proc.wait(timeout=10)


def client(url: str, token: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    return Client(streamable_http_client(url, http_client=http))


def test_a_listen_stream_ends_when_the_token_that_opened_it_expires(
    stack: dict[str, Any],
) -> None:
    base, auth, beta = stack["base"], stack["auth"], stack["beta"]
    lasting = auth.sign(auth.claims("ep:pack:beta", aud=base))
    # accepted for LEFT_S more seconds: `exp` plus the clock skew
    short = auth.sign(auth.claims("ep:pack:beta", aud=base, exp=int(time.time()) - SKEW_S + LEFT_S))

    async def go() -> None:
        async with (
            client(f"{base}/mcp", short) as c,
            c.listen(resource_subscriptions=[GARDENING]) as ending,
            client(f"{base}/mcp", lasting) as other,
            other.listen(resource_subscriptions=[GARDENING]) as staying,
        ):
            # nothing changes: the short token's stream ends by itself (before the fix it
            # stayed open as long as the client did)
            with (
                anyio.fail_after(LEFT_S + 90),
                pytest.raises((StopAsyncIteration, SubscriptionLost)),
            ):
                await ending.__anext__()
            # the other stream, opened with a token still valid, is still told of an edit
            for attempt in range(20):  # bounded: the watcher may not be watching yet
                (beta / "gardening.md").write_text(f"# Gardening\n\nEdit {attempt}.\n")
                with anyio.move_on_after(5):
                    assert await staying.__anext__() == ResourceUpdated(uri=GARDENING)
                    return
            raise AssertionError("the lasting stream heard of no edit")

    anyio.run(go)
