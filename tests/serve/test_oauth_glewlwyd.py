"""OAuth against Debian's glewlwyd (tests/glewlwyd_as.py), a real authorization server
installed by `.ci/run`: ep-mcp discovers its keys from the issuer's metadata, the official SDK
client gets a client-credentials token from it on its own, and that token opens alpha and
nothing else."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client

from conftest import wait_healthy
from glewlwyd_as import available, running
from oauth_as import free_port

CLI = [sys.executable, "-c", "from ep_mcp.cli import main; main()"]
BETA_TEXT = ("tomatoes", "Compost needs")

pytestmark = pytest.mark.skipif(available() is not None, reason=str(available()))


@pytest.fixture(scope="module")
def stack(
    packs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("glewlwyd")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    resources = [base, f"{base}/mcp", f"{base}/packs/alpha/mcp", f"{base}/packs/beta/mcp"]
    with running(tmp, free_port(), resources) as gl:
        config = tmp / "config.yaml"
        config.write_text(
            f"packs:\n  - path: {packs['alpha']}\n  - path: {packs['beta']}\n    slug: beta\n"
            "embedding:\n  provider: hashing\n"
            "server:\n  watch: false\n  auth:\n"
            f"    issuers: ['{gl.issuer}']\n    resource: '{base}'\n",
            encoding="utf-8",
        )
        log = tmp / "server.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [*CLI, "serve", "--config", str(config), "--port", str(port), "--workers", "1"],
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "EP_MCP_HOME": str(tmp / "home")},
            )
            try:
                wait_healthy(base, proc, log, 60)
                yield {"base": base, "gl": gl, "log": log}
            finally:
                proc.terminate()
                proc.wait(timeout=10)


class Memory:
    def __init__(self) -> None:
        self.tokens: Any = None
        self.client: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client

    async def set_client_info(self, client_info: Any) -> None:
        self.client = client_info


def test_the_sdk_client_gets_a_glewlwyd_token_and_reaches_alpha(stack: dict[str, Any]) -> None:
    base, gl = stack["base"], stack["gl"]
    storage = Memory()

    async def go() -> None:
        provider = ClientCredentialsOAuthProvider(
            server_url=f"{base}/packs/alpha/mcp",
            storage=storage,
            client_id=gl.client_id,
            client_secret=gl.client_secret,
            scope="ep:pack:alpha",
            issuer=gl.issuer,
        )
        http = httpx2.AsyncClient(auth=provider, timeout=30)
        with anyio.fail_after(60):
            async with Client(
                streamable_http_client(f"{base}/packs/alpha/mcp", http_client=http)
            ) as c:
                r = await c.call_tool("ep_search", {"query": "admin port"})
                assert not r.is_error
                assert "8080" in str(r.structured_content)

    anyio.run(go)
    assert storage.tokens is not None


def test_a_glewlwyd_token_for_alpha_opens_alpha_and_nothing_else(stack: dict[str, Any]) -> None:
    base, gl = stack["base"], stack["gl"]
    r = httpx2.post(
        gl.token_endpoint,
        data={"grant_type": "client_credentials", "scope": "ep:pack:alpha", "resource": base},
        auth=(gl.client_id, gl.client_secret),
    )
    assert r.status_code == 200, r.text
    token = r.json()["access_token"]
    auth = {"Authorization": f"Bearer {token}"}
    r = httpx2.get(f"{base}/search", params={"q": "admin port", "pack": "alpha"}, headers=auth)
    assert r.status_code == 200 and "8080" in r.text
    r = httpx2.get(f"{base}/search", params={"q": "water", "pack": "beta"}, headers=auth)
    assert r.status_code == 403
    assert 'error="insufficient_scope", scope="ep:pack:beta"' in r.headers["www-authenticate"]
    r = httpx2.get(f"{base}/search", params={"q": "water greens morning"}, headers=auth)
    assert r.status_code == 200
    for text in BETA_TEXT:
        assert text not in r.text
    r = httpx2.get(f"{base}/search", params={"q": "admin port", "pack": "alpha"})
    assert r.status_code == 401
    assert r.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{base}/.well-known/oauth-protected-resource"'
    )
    assert token not in stack["log"].read_text()
