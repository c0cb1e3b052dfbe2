"""The MCP servers built on first use for tokens' scopes on `/mcp` are bounded; past the
bound a token is told so in one line (in process: the app on httpx's ASGI transport, a real
authorization server's keys on 127.0.0.1)."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import httpx2
import pytest

from ep_mcp.config.load import load_settings
from ep_mcp.serve.app import open_context
from ep_mcp.serve.http import app as http_app
from oauth_as import AuthServer, free_port, serving

BASE = "http://127.0.0.1:9"  # the resource the tokens name (no server listens there)
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def test_a_token_past_the_bound_of_token_servers_is_a_503_that_says_so(
    packs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http_app, "MAX_TOKEN_SERVERS", 1)
    as_port = free_port()
    auth = AuthServer(resource=BASE)
    auth.base = f"http://127.0.0.1:{as_port}"
    settings = load_settings(
        data={
            "home": str(tmp_path / "home"),
            "embedding": {"provider": "hashing"},
            "packs": [{"path": str(packs["alpha"])}, {"path": str(packs["beta"]), "slug": "beta"}],
            "server": {"watch": False, "auth": {"issuers": [auth.issuer], "resource": BASE}},
        }
    )
    with serving(auth.app(), as_port):
        serve, ring = open_context(settings, child_env=os.environ)
        app = http_app.create_app(serve, settings.server, ring)
        first = auth.sign(auth.claims("ep:pack:alpha"))
        second = auth.sign(auth.claims("ep:pack:alpha ep:pack:beta"))

        async def go() -> list[httpx2.Response]:
            async with app.router.lifespan_context(app):
                transport = httpx2.ASGITransport(app=app)
                async with httpx2.AsyncClient(transport=transport, base_url=BASE) as c:
                    return [
                        await c.post(
                            "/mcp", json=INIT, headers={**HEADERS, "Authorization": f"Bearer {t}"}
                        )
                        for t in (first, second)
                    ]

        try:
            ok, refused = anyio.run(go)
        finally:
            serve.library.close()
    assert ok.status_code == 200, ok.text
    assert refused.status_code == 503, refused.text
    message = refused.json()["error"]["message"]
    assert "MCP servers for distinct token scopes" in message and "/packs/" in message, message
    assert "\n" not in message
