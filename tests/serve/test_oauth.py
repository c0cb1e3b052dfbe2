"""OAuth 2.1 end to end: a real authorization server (Authlib, tests/oauth_as.py) and a
real `ep-mcp serve --config` on uvicorn, both on 127.0.0.1.

A token whose scope opens alpha reaches alpha — over MCP with the official SDK client (its own
client-credentials OAuth flow, discovery from the 401 onwards) and over `/search` — and nothing
else; then the attack battery: every forged, stale, misdirected or revoked token is refused with
the right `WWW-Authenticate`, and no refusal carries pack text.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import Client
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from conftest import wait_healthy
from oauth_as import AuthServer, free_port, serving

CLI = [sys.executable, "-c", "from ep_mcp.cli import main; main()"]
ALPHA_TEXT = ("Open port 8080", "routing table", "Alpha explains routers")
BETA_TEXT = ("tomatoes", "Compost needs")
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
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


class Memory:
    """The SDK client's token storage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


@pytest.fixture(scope="module")
def stack(
    packs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    """The authorization server, and ep-mcp serving alpha (also keyed sk-alpha) and beta."""
    tmp = tmp_path_factory.mktemp("oauth")
    port, as_port = free_port(), free_port()
    base = f"http://127.0.0.1:{port}"
    auth = AuthServer(resource=base)
    auth.base = f"http://127.0.0.1:{as_port}"
    config = tmp / "config.yaml"
    config.write_text(
        f"packs:\n  - path: {packs['alpha']}\n    api_keys: [sk-alpha]\n"
        f"  - path: {packs['beta']}\n    slug: beta\n"
        "embedding:\n  provider: hashing\n"
        "server:\n  watch: false\n  auth:\n"
        f"    issuers: ['{auth.issuer}']\n    resource: '{base}'\n"
        "    client_id: ep-mcp\n    client_secret_env: EP_TEST_INTROSPECTION_SECRET\n",
        encoding="utf-8",
    )
    log = tmp / "server.log"
    with serving(auth.app(), as_port), log.open("wb") as out:
        env = {
            **os.environ,
            "EP_MCP_HOME": str(tmp / "home"),
            "EP_TEST_INTROSPECTION_SECRET": auth.secrets["ep-mcp"],
        }
        proc = subprocess.Popen(
            [*CLI, "serve", "--config", str(config), "--port", str(port)],
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


def token_for(auth: AuthServer, scope: str, resource: str, client: str = "jwt-client") -> str:
    r = httpx2.post(
        f"{auth.base}/token",
        data={"grant_type": "client_credentials", "scope": scope, "resource": resource},
        auth=(client, auth.secrets[client]),
    )
    assert r.status_code == 200, r.text
    return str(r.json()["access_token"])


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def no_pack_text(body: str) -> None:
    for text in (*ALPHA_TEXT, *BETA_TEXT):
        assert text not in body, text


def test_the_protected_resource_metadata_names_the_issuer_for_every_route(
    stack: dict[str, Any],
) -> None:
    base, auth = stack["base"], stack["auth"]
    for route, scopes in [
        ("", set()),  # read by anyone: no pack's name (GET /packs hides them too)
        ("/mcp", set()),
        ("/packs/alpha/mcp", {"ep:pack:alpha"}),
    ]:
        r = httpx2.get(f"{base}/.well-known/oauth-protected-resource{route}")
        assert r.status_code == 200, route
        doc = r.json()
        assert doc["resource"] == base + route
        assert doc["authorization_servers"] == [auth.issuer]
        assert set(doc["scopes_supported"]) == scopes
        assert doc["bearer_methods_supported"] == ["header"]
    r = httpx2.get(f"{base}/.well-known/oauth-protected-resource/packs/no.such-pack/mcp")
    assert r.status_code == 200  # like any pack's: a 404 here told which hidden slugs exist
    assert r.json()["resource"] == base + "/packs/no.such-pack/mcp"
    assert r.json()["scopes_supported"] == ["ep:pack:no.such-pack"]


def test_an_anonymous_caller_cannot_tell_a_hidden_pack_from_an_unknown_slug(
    stack: dict[str, Any],
) -> None:
    base, auth = stack["base"], stack["auth"]
    token = token_for(auth, "ep:pack:alpha", base)

    def answers(slug: str, headers: dict[str, str]) -> list[tuple[int, str, str, str]]:
        out = []
        for r in (
            httpx2.get(f"{base}/.well-known/oauth-protected-resource/packs/{slug}/mcp"),
            httpx2.post(f"{base}/packs/{slug}/mcp", json=INIT, headers={**MCP_HEADERS, **headers}),
            httpx2.get(f"{base}/search", params={"q": "tomatoes", "pack": slug}, headers=headers),
        ):
            out.append(
                (
                    r.status_code,
                    r.text.replace(slug, "<slug>"),
                    r.headers.get("www-authenticate", "").replace(slug, "<slug>"),
                    r.headers.get("content-type", ""),
                )
            )
        return out

    for headers in ({}, bearer("not-a-token"), bearer(token)):
        assert answers("beta", headers) == answers("gamma", headers), headers


def test_without_a_token_every_pack_is_a_401_pointing_at_the_metadata(
    stack: dict[str, Any],
) -> None:
    base = stack["base"]
    for url, route in [
        (f"{base}/mcp", "/mcp"),
        (f"{base}/packs/beta/mcp", "/packs/beta/mcp"),
    ]:
        r = httpx2.post(url, json=INIT, headers=MCP_HEADERS)
        assert r.status_code == 401
        assert r.headers["www-authenticate"] == (
            f'Bearer resource_metadata="{base}/.well-known/oauth-protected-resource{route}"'
        )
        assert r.headers["cache-control"] == "no-store"
        no_pack_text(r.text)
    r = httpx2.get(f"{base}/search", params={"q": "tomatoes", "pack": "beta"})
    assert r.status_code == 401
    assert 'resource_metadata="' in r.headers["www-authenticate"]
    no_pack_text(r.text)
    assert httpx2.get(f"{base}/packs").json() == {"packs": []}


def test_the_sdk_client_gets_a_token_for_alpha_and_reaches_alpha_and_nothing_else(
    stack: dict[str, Any],
) -> None:
    base, auth = stack["base"], stack["auth"]
    storage = Memory()

    def client(url: str) -> Client:
        provider = ClientCredentialsOAuthProvider(
            server_url=url,
            storage=storage,
            client_id="jwt-client",
            client_secret=auth.secrets["jwt-client"],
            scope="ep:pack:alpha",
            issuer=auth.issuer,
        )
        http = httpx2.AsyncClient(auth=provider, timeout=30)
        return Client(streamable_http_client(url, http_client=http))

    async def go() -> None:
        with anyio.fail_after(60):
            async with client(f"{base}/packs/alpha/mcp") as c:
                tools = {t.name for t in (await c.list_tools()).tools}
                assert "ep_search" in tools and not any(t.startswith("skill_") for t in tools)
                r = await c.call_tool("ep_search", {"query": "admin port"})
                assert not r.is_error
                assert "Open port 8080" in json.dumps(r.structured_content)

    anyio.run(go)
    assert storage.tokens is not None  # the SDK's own OAuth flow fetched it from the server
    token = storage.tokens.access_token
    claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
    assert claims["aud"] == f"{base}/packs/alpha/mcp"  # RFC 8707: the resource it asked for
    # the same token on beta's route was not issued for it (RFC 8707): 401
    r = httpx2.post(f"{base}/packs/beta/mcp", json=INIT, headers={**MCP_HEADERS, **bearer(token)})
    assert r.status_code == 401 and 'error="invalid_token"' in r.headers["www-authenticate"]
    no_pack_text(r.text)
    # a token for the whole server (its origin) with alpha's scope: 403, naming beta's scope
    token = token_for(auth, "ep:pack:alpha", base)
    r = httpx2.post(f"{base}/packs/beta/mcp", json=INIT, headers={**MCP_HEADERS, **bearer(token)})
    assert r.status_code == 403
    assert r.headers["www-authenticate"] == (
        'Bearer error="insufficient_scope", scope="ep:pack:beta", resource_metadata='
        f'"{base}/.well-known/oauth-protected-resource/packs/beta/mcp"'
    )
    no_pack_text(r.text)


def test_a_token_for_alpha_searches_alpha_and_nothing_else_on_every_route(
    stack: dict[str, Any],
) -> None:
    base, auth = stack["base"], stack["auth"]
    token = token_for(auth, "ep:pack:alpha", base)
    r = httpx2.get(
        f"{base}/search", params={"q": "admin port", "pack": "alpha"}, headers=bearer(token)
    )
    assert r.status_code == 200 and "Open port 8080" in r.text
    assert "no-store" in r.headers["cache-control"]
    r = httpx2.get(
        f"{base}/search", params={"q": "tomatoes", "pack": "beta"}, headers=bearer(token)
    )
    assert r.status_code == 403 and "insufficient_scope" in r.headers["www-authenticate"]
    no_pack_text(r.text)
    # merged search (no pack): only what the token opens, beta's matching text never
    r = httpx2.get(f"{base}/search", params={"q": "water greens morning"}, headers=bearer(token))
    assert r.status_code == 200
    assert r.json().get("packs", [r.json().get("pack")]) == ["alpha"]
    for text in BETA_TEXT:
        assert text not in r.text
    assert [
        p["slug"] for p in httpx2.get(f"{base}/packs", headers=bearer(token)).json()["packs"]
    ] == ["alpha"]

    async def go() -> None:
        http = httpx2.AsyncClient(headers=bearer(token), timeout=30)
        with anyio.fail_after(60):
            await mcp_calls(Client(streamable_http_client(f"{base}/mcp", http_client=http)))

    async def mcp_calls(client: Client) -> None:
        async with client as c:
            r = await c.call_tool("ep_search", {"query": "tomatoes", "pack": "beta"})
            assert r.is_error  # beta is not served to this token at all
            no_pack_text(json.dumps(r.model_dump(mode="json")))
            r = await c.call_tool("ep_list_topics", {"pack": "alpha"})
            assert not r.is_error
            tools = {t.name for t in (await c.list_tools()).tools}
            assert not any(t.startswith("skill_") for t in tools)

    anyio.run(go)


def test_a_token_for_two_packs_gets_an_mcp_server_built_for_exactly_those(
    stack: dict[str, Any],
) -> None:
    """No API key opens alpha and beta together: /mcp builds that server on first use."""
    base, auth = stack["base"], stack["auth"]
    token = token_for(auth, "ep:pack:alpha ep:pack:beta", base)

    async def go() -> None:
        for _ in range(2):  # the second client reuses the server the first one built
            http = httpx2.AsyncClient(headers=bearer(token), timeout=30)
            with anyio.fail_after(60):
                async with Client(streamable_http_client(f"{base}/mcp", http_client=http)) as c:
                    r = await c.call_tool("ep_search", {"query": "tomatoes", "pack": "beta"})
                    assert not r.is_error and "tomatoes" in json.dumps(r.structured_content)
                    r = await c.call_tool("ep_search", {"query": "admin port", "pack": "alpha"})
                    assert not r.is_error
                    tools = {t.name for t in (await c.list_tools()).tools}
                    assert not any(t.startswith("skill_") for t in tools)

    anyio.run(go)


def test_an_api_key_still_opens_its_pack_beside_tokens(stack: dict[str, Any]) -> None:
    base = stack["base"]
    r = httpx2.get(
        f"{base}/search", params={"q": "admin port", "pack": "alpha"}, headers=bearer("sk-alpha")
    )
    assert r.status_code == 200 and "Open port 8080" in r.text
    r = httpx2.get(
        f"{base}/search", params={"q": "tomatoes", "pack": "beta"}, headers=bearer("sk-alpha")
    )
    assert r.status_code == 403  # the key opens alpha only; beta has no key and needs a token


def _hs256_with_public_key(auth: AuthServer, claims: dict[str, Any]) -> str:
    """Key confusion: HS256 with the RSA public key's PEM as the shared secret."""
    import hashlib
    import hmac

    pem = auth.key.as_pem(private=False)
    head = base64.urlsafe_b64encode(json.dumps({"alg": "HS256", "kid": "k1"}).encode()).rstrip(b"=")
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=")
    signing = head + b"." + body
    sig = base64.urlsafe_b64encode(hmac.new(pem, signing, hashlib.sha256).digest()).rstrip(b"=")
    return (signing + b"." + sig).decode()


def _unsigned(claims: dict[str, Any]) -> str:
    head = base64.urlsafe_b64encode(b'{"alg":"none","typ":"JWT"}').rstrip(b"=")
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=")
    return (head + b"." + body + b".").decode()


def _other_key(claims: dict[str, Any]) -> str:
    import jwt

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return jwt.encode(claims, pem, algorithm="RS256", headers={"kid": "k1"})


FORGED = [
    "expired",
    "not_yet_valid",
    "wrong_audience",
    "wrong_issuer",
    "alg_none",
    "hs256_key_confusion",
    "signed_by_another_key",
    "garbage_jwt",
    "garbage_opaque",
    "revoked_opaque",
]


def forged(name: str, auth: AuthServer, base: str) -> str:
    now = int(time.time())
    scope = "ep:pack:alpha ep:pack:beta ep:hub"
    if name == "expired":
        return auth.sign(auth.claims(scope, iat=now - 7200, exp=now - 3600))
    if name == "not_yet_valid":
        return auth.sign(auth.claims(scope, nbf=now + 3600))
    if name == "wrong_audience":
        return auth.sign(auth.claims(scope, aud="https://other.example.com"))
    if name == "wrong_issuer":
        return auth.sign(auth.claims(scope, iss=auth.issuer + "/"))  # exact match, no slash
    if name == "alg_none":
        return _unsigned(auth.claims(scope))
    if name == "hs256_key_confusion":
        return _hs256_with_public_key(auth, auth.claims(scope))
    if name == "signed_by_another_key":
        return _other_key(auth.claims(scope))
    if name == "garbage_jwt":
        return "eyJhbGciOiJSUzI1NiJ9.bm90IGpzb24.c2ln"
    if name == "garbage_opaque":
        return "sk-neither-a-key-nor-a-token"
    assert name == "revoked_opaque"
    token = token_for(auth, scope, base, client="opaque-client")
    revoke = httpx2.post(
        f"{auth.base}/revoke",
        data={"token": token},
        auth=("opaque-client", auth.secrets["opaque-client"]),
    )
    assert revoke.status_code == 200
    return token


@pytest.mark.parametrize("name", FORGED)
def test_every_bad_token_is_a_401_with_invalid_token_and_no_pack_text(
    stack: dict[str, Any], name: str
) -> None:
    base, auth = stack["base"], stack["auth"]
    token = forged(name, auth, base)
    probes = [
        ("POST", f"{base}/packs/alpha/mcp", "/packs/alpha/mcp"),
        ("POST", f"{base}/mcp", "/mcp"),
        ("GET", f"{base}/search?q=admin+port&pack=alpha", ""),
        ("GET", f"{base}/search?q=tomatoes", ""),
    ]
    for method, url, route in probes:
        headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
        if method == "POST":
            r = httpx2.post(url, json=INIT, headers=headers)
        else:
            r = httpx2.get(url, headers=headers)
        assert r.status_code == 401, (name, url, r.text)
        assert r.headers["www-authenticate"] == (
            f'Bearer error="invalid_token", resource_metadata="{base}/.well-known/'
            f'oauth-protected-resource{route}"'
        )
        assert r.headers["cache-control"] == "no-store"
        no_pack_text(r.text)
    log = stack["log"].read_text()
    assert token not in log


def test_an_opaque_token_is_introspected_and_opens_only_its_scopes(stack: dict[str, Any]) -> None:
    base, auth = stack["base"], stack["auth"]
    token = token_for(auth, "ep:pack:beta", base, client="opaque-client")
    r = httpx2.get(
        f"{base}/search", params={"q": "tomatoes", "pack": "beta"}, headers=bearer(token)
    )
    assert r.status_code == 200 and "tomatoes" in r.text
    r = httpx2.get(
        f"{base}/search", params={"q": "admin port", "pack": "alpha"}, headers=bearer(token)
    )
    assert r.status_code == 403
    no_pack_text(r.text)


def test_a_token_in_the_url_query_is_refused_before_routing(stack: dict[str, Any]) -> None:
    base, auth = stack["base"], stack["auth"]
    token = token_for(auth, "ep:pack:alpha", base)
    for name in ("access_token", "token"):
        r = httpx2.get(f"{base}/search", params={"q": "admin port", "pack": "alpha", name: token})
        assert r.status_code == 400  # RFC 6750 §3.1: a malformed request, not a bad token
        assert r.headers["www-authenticate"] == 'Bearer error="invalid_request"'
        assert "not accepted in the URL" in r.text
        no_pack_text(r.text)


def test_a_jwks_that_does_not_answer_is_a_401_and_one_log_line_not_a_hang(
    packs: dict[str, Path], tmp_path: Path
) -> None:
    """The keys' URL accepts connections and never answers: each token is refused once the
    fetch times out, and the next within `jwks_refetch_s` is refused without asking again."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    jwks = f"http://127.0.0.1:{silent.getsockname()[1]}/jwks"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    auth = AuthServer(resource=base)
    auth.base = "http://127.0.0.1:1"  # nothing there either: only the pinned jwks_url is asked
    config = tmp_path / "config.yaml"
    config.write_text(
        f"packs:\n  - path: {packs['alpha']}\n"
        "embedding:\n  provider: hashing\n"
        "server:\n  watch: false\n  auth:\n"
        f"    issuers: ['{auth.issuer}']\n    resource: '{base}'\n    jwks_url: '{jwks}'\n"
        "    timeout_s: 1.0\n    jwks_refetch_s: 600\n",
        encoding="utf-8",
    )
    log = tmp_path / "server.log"
    token = auth.sign(auth.claims("ep:pack:alpha"))
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*CLI, "serve", "--config", str(config), "--port", str(port), "--workers", "1"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "EP_MCP_HOME": str(tmp_path / "home")},
        )
        try:
            wait_healthy(base, proc, log, 60)
            for _ in range(3):
                r = httpx2.get(
                    f"{base}/search", params={"q": "admin port"}, headers=bearer(token), timeout=30
                )
                assert r.status_code == 401
                assert 'error="invalid_token"' in r.headers["www-authenticate"]
                no_pack_text(r.text)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
            silent.close()
    lines = [ln for ln in log.read_text().splitlines() if "cannot fetch the signing keys" in ln]
    assert len(lines) == 1, log.read_text()
    assert token not in log.read_text()
