"""The auth battery: every route spelling, credential and MCP method; and the hub's keys.

Requests are fed to the ASGI app with the exact raw path a client could send (no client-side
normalisation), so `/mcp%0A`, `/./mcp` and friends reach the server as written. A response
"leaks" when it carries text that only a pack's content, manifest or instructions contain.
"""

from __future__ import annotations

import dataclasses
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import anyio
import pytest

from ep_mcp.config.load import load_settings
from ep_mcp.config.model import HubSettings, TapSettings
from ep_mcp.serve.auth import KeyRing
from ep_mcp.serve.context import ServeContext
from ep_mcp.serve.http.app import create_app

ALPHA_MARKERS = (
    "Routing moves packets",
    "Alpha Pack",
    "Alpha explains routers",
    "admin console",
    "quarterly router audit",
    "Search alpha before",
    "Diagnose a router",
    "concepts/routing",
    "Routers and ports",
)
BETA_MARKERS = ("tomatoes", "Compost needs", "Gardening", "gardening.md")
HUB_MARKERS = ("Renew TLS certificates", "cert-renewal", "RENEWAL-CANARY")

MODERN = "2026-07-28"
LEGACY = "2025-06-18"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "matrix", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}

# (method, params, Mcp-Name header)
METHODS: list[tuple[str, dict[str, Any], str | None]] = [
    ("tools/list", {}, None),
    ("tools/call", {"name": "ep_search", "arguments": {"query": "router port"}}, "ep_search"),
    (
        "tools/call",
        {"name": "ep_search", "arguments": {"query": "routing", "pack": "alpha"}},
        "ep_search",
    ),
    (
        "tools/call",
        {"name": "ep_read", "arguments": {"path": "concepts/routing.md", "pack": "alpha"}},
        "ep_read",
    ),
    ("tools/call", {"name": "ep_list_topics", "arguments": {"pack": "alpha"}}, "ep_list_topics"),
    (
        "tools/call",
        {
            "name": "ep_graph_traverse",
            "arguments": {"file_path": "concepts/routing.md", "pack": "alpha"},
        },
        "ep_graph_traverse",
    ),
    ("resources/list", {}, None),
    ("resources/templates/list", {}, None),
    ("resources/read", {"uri": "ep://alpha/manifest"}, "ep://alpha/manifest"),
    ("resources/read", {"uri": "ep://alpha/file/overview.md"}, "ep://alpha/file/overview.md"),
    ("resources/read", {"uri": "skill://alpha/SKILL.md"}, "skill://alpha/SKILL.md"),
    ("prompts/list", {}, None),
    ("prompts/get", {"name": "diagnose"}, "diagnose"),
    ("prompts/get", {"name": "alpha/diagnose"}, "alpha/diagnose"),
    ("skills/list", {}, None),
    ("skills/get", {"uri": "skill://alpha/SKILL.md"}, None),
]
LEGACY_ONLY: list[tuple[str, dict[str, Any], str | None]] = [
    (
        "initialize",
        {
            "protocolVersion": LEGACY,
            "capabilities": {},
            "clientInfo": {"name": "m", "version": "1"},
        },
        None,
    ),
]
MODERN_ONLY: list[tuple[str, dict[str, Any], str | None]] = [("server/discover", {}, None)]

SUFFIXES = ["", "%0A", "%0D", "%09", "%20", "%00", "/", "/.", "%0A?x=1", "?x=1", "%2F"]


def spellings(route: str) -> list[str]:
    out = [route + s for s in SUFFIXES]
    out += ["/" + route, route.upper(), "/." + route, route.replace("/mcp", "/%6Dcp")]
    if route.startswith("/packs/"):
        out += [
            route.replace("/packs/", "/packs//"),
            route.replace("alpha", "ALPHA"),
            route.replace("alpha", "alpha%0A"),
            route.replace("alpha", "beta/../alpha"),
        ]
    return out


CREDENTIALS: dict[str, list[tuple[bytes, bytes]]] = {
    "none": [],
    "wrong": [(b"authorization", b"Bearer sk-wrong")],
    "other-pack": [(b"authorization", b"Bearer sk-beta")],
    "malformed": [(b"authorization", b"Basic c2stYWxwaGE=")],
    "twice": [(b"authorization", b"Bearer sk-beta"), (b"authorization", b"Bearer sk-alpha")],
    "latin1": [(b"authorization", b"Bearer sk-\xe9alpha")],
}


async def asgi_request(
    app: Any, method: str, raw: str, headers: list[tuple[bytes, bytes]], body: bytes = b""
) -> tuple[int, bytes]:
    """One request with an exact raw target, as a server would hand it to the app."""
    raw_path, _, query = raw.partition("?")
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": unquote(raw_path),
        "raw_path": raw_path.encode("latin-1"),
        "query_string": query.encode("latin-1"),
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1:8000"), *headers],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    status = 0
    chunks: list[bytes] = []

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    with anyio.fail_after(60):  # bounds a hang only
        await app(scope, receive, send)
    return status, b"".join(chunks)


def rpc(
    method: str, params: dict[str, Any], name: str | None, modern: bool
) -> tuple[list[tuple[bytes, bytes]], bytes]:
    headers = [
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (b"mcp-protocol-version", (MODERN if modern else LEGACY).encode()),
    ]
    if modern:
        headers.append((b"mcp-method", method.encode()))
        if name is not None:
            headers.append((b"mcp-name", name.encode()))
        params = {**params, "_meta": META}
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
    return headers, body.encode()


def leaks(body: bytes, markers: tuple[str, ...]) -> list[str]:
    text = body.decode("utf-8", "replace")
    return [m for m in markers if m in text]


def run_app(serve: Any, ring: KeyRing, fn: Any, **server: Any) -> Any:
    app = create_app(serve, load_settings(data={"server": server}).server, ring)

    async def go() -> Any:
        async with app.router.lifespan_context(app):
            return await fn(app)

    return anyio.run(go)


def calls() -> list[tuple[str, dict[str, Any], str | None, bool]]:
    legacy = [(m, p, n, False) for m, p, n in METHODS + LEGACY_ONLY]
    modern = [(m, p, n, True) for m, p, n in METHODS + MODERN_ONLY]
    return legacy + modern


def test_no_key_and_wrong_keys_get_no_pack_content_over_any_spelling(serve_ctx: Any) -> None:
    """alpha and beta are both keyed: without the right key nothing of either comes back."""
    serve, ring = serve_ctx
    routes = spellings("/mcp") + spellings("/packs/alpha/mcp")

    async def fn(app: Any) -> dict[str, int]:
        tally = {"requests": 0, "leaks": 0}
        found: list[tuple[str, str, str, list[str]]] = []
        for cred_name, cred in CREDENTIALS.items():
            for path in routes:
                for method, params, name, modern in calls():
                    headers, body = rpc(method, params, name, modern)
                    status, out = await asgi_request(app, "POST", path, headers + cred, body)
                    tally["requests"] += 1
                    bad = leaks(out, ALPHA_MARKERS)
                    if cred_name != "other-pack":
                        bad += leaks(out, BETA_MARKERS)
                    if bad:
                        found.append((cred_name, path, method, bad))
                    assert status != 500, (cred_name, path, method, out[:300])
        assert not found, found[:5]
        return tally

    tally = run_app(serve, ring, fn)
    assert tally["requests"] > 2000


def test_the_matrix_would_see_a_leak_with_the_right_key(serve_ctx: Any) -> None:
    """The positive control: the same probes with alpha's key do return alpha's content."""
    serve, ring = serve_ctx

    async def fn(app: Any) -> dict[tuple[str, bool], int]:
        answered: dict[tuple[str, bool], int] = {}
        for path in ("/mcp", "/packs/alpha/mcp"):
            for method, params, name, modern in calls():
                headers, body = rpc(method, params, name, modern)
                cred = [(b"authorization", b"Bearer sk-alpha")]
                status, out = await asgi_request(app, "POST", path, headers + cred, body)
                assert status != 500
                if leaks(out, ALPHA_MARKERS):
                    answered[(path, modern)] = answered.get((path, modern), 0) + 1
                assert not leaks(out, BETA_MARKERS), (path, method)
        return answered

    answered = run_app(serve, ring, fn)
    # most probes return alpha content in both protocol eras on both routes
    assert all(answered.get((p, m), 0) >= 8 for p in ("/mcp", "/packs/alpha/mcp") for m in (0, 1))


@pytest.mark.parametrize("cred", ["none", "wrong", "other-pack", "malformed", "twice"])
@pytest.mark.parametrize(
    "target",
    [
        "/search?q=routing+moves+packets&pack=alpha",
        "/search?q=routing+moves+packets",
        "/search%0A?q=routing&pack=alpha",
        "/search/?q=routing&pack=alpha",
        "/SEARCH?q=routing&pack=alpha",
        "/packs",
        "/packs%0A",
        "/health",
    ],
)
def test_http_routes_give_no_pack_content_without_its_key(
    serve_ctx: Any, cred: str, target: str
) -> None:
    serve, ring = serve_ctx

    async def fn(app: Any) -> None:
        for method in ("GET", "POST"):
            body = b""
            headers = list(CREDENTIALS[cred])
            if method == "POST":
                body = b'{"q": "routing moves packets", "pack": "alpha"}'
                headers.append((b"content-type", b"application/json"))
            status, out = await asgi_request(app, method, target, headers, body)
            assert status != 500
            assert not leaks(out, ALPHA_MARKERS), (method, target, out[:300])
            if cred != "other-pack":
                assert not leaks(out, BETA_MARKERS), (method, target, out[:300])

    run_app(serve, ring, fn)


def test_get_and_delete_on_mcp_answer_405_without_an_open_stream(serve_ctx: Any) -> None:
    serve, ring = serve_ctx

    async def fn(app: Any) -> None:
        for path in ("/mcp", "/packs/alpha/mcp"):
            for method in ("GET", "DELETE"):
                headers = [
                    (b"accept", b"text/event-stream"),
                    (b"authorization", b"Bearer sk-alpha"),
                ]
                status, out = await asgi_request(app, method, path, headers)
                assert status == 405 and json.loads(out)["error"]["code"] == "method_not_allowed"

    run_app(serve, ring, fn)


@pytest.mark.parametrize("bad_id", ["{}", "[1]", "1.5", "true", "null"])
def test_json_rpc_ids_of_the_wrong_type_get_400(open_ctx: Any, bad_id: str) -> None:
    async def fn(app: Any) -> None:
        headers, _ = rpc("tools/list", {}, None, False)
        body = f'{{"jsonrpc": "2.0", "id": {bad_id}, "method": "tools/list"}}'.encode()
        status, out = await asgi_request(app, "POST", "/mcp", headers, body)
        assert status == 400, out
        assert json.loads(out)["error"]["code"] == -32600

    run_app(open_ctx, KeyRing(), fn)


def test_lone_surrogates_get_a_short_4xx_over_http_and_mcp(open_ctx: Any) -> None:
    async def fn(app: Any) -> None:
        headers = [(b"content-type", b"application/json")]
        for body in (b'{"q": "\\ud800", "pack": "beta"}', b'{"q": "x", "pack": "\\ud800"}'):
            status, out = await asgi_request(app, "POST", "/search", headers, body)
            assert status == 400 and b"surrogate" in out, out
        headers, body = rpc(
            "tools/call",
            {"name": "ep_search", "arguments": {"query": "\ud800", "pack": "beta"}},
            "ep_search",
            False,
        )
        status, out = await asgi_request(app, "POST", "/mcp", headers, body)
        assert status == 400 and json.loads(out)["error"]["code"] == -32700  # the SDK's parser

    run_app(open_ctx, KeyRing(), fn)


def test_a_huge_query_is_refused_without_being_echoed(open_ctx: Any) -> None:
    async def fn(app: Any) -> None:
        huge = "a" * 900_000
        headers, body = rpc(
            "tools/call",
            {"name": "ep_search", "arguments": {"query": huge, "pack": "beta"}},
            "ep_search",
            False,
        )
        status, out = await asgi_request(app, "POST", "/mcp", headers, body)
        assert len(out) < 2000, len(out)
        assert json.loads(out)["result"]["isError"]
        status, out = await asgi_request(
            app, "GET", f"/search?q={'a' * 5000}&pack=beta&n=x" + "1" * 5000, []
        )
        assert status == 400 and len(out) < 2000

    run_app(open_ctx, KeyRing(), fn, max_body_bytes=2_000_000)


# -- the skills hub --------------------------------------------------------------------------


@pytest.fixture
def hub_serve(serve_ctx: Any, tmp_path: Path) -> Iterator[ServeContext]:
    """alpha and beta keyed, plus a hub over one local folder tap."""
    from ep_mcp.hub.hub import SkillHub

    serve, _ = serve_ctx
    tap = tmp_path / "tap" / "cert-renewal"
    tap.mkdir(parents=True)
    (tap / "SKILL.md").write_text(
        "---\nname: cert-renewal\ndescription: Renew TLS certificates before they expire.\n---\n"
        "# Renew TLS certificates\n\nRENEWAL-CANARY: run certbot renew weekly.\n",
        encoding="utf-8",
    )
    settings = dataclasses.replace(
        serve.library.settings,
        home=tmp_path / "home",
        hub=dataclasses.replace(
            HubSettings(), taps=(TapSettings(url=str(tmp_path / "tap"), name="local"),)
        ),
    )
    hub = SkillHub(settings, {})
    hub.reindex().to_dict()
    yield dataclasses.replace(serve, hub=hub)
    hub.close()


HUB_CALLS = [
    ("tools/list", {}, None),
    ("tools/call", {"name": "skill_search", "arguments": {"query": "renew tls"}}, "skill_search"),
    ("tools/call", {"name": "skill_list", "arguments": {}}, "skill_list"),
    ("tools/call", {"name": "skill_read", "arguments": {"name": "cert-renewal"}}, "skill_read"),
]


def hub_probe(app: Any, cred: list[tuple[bytes, bytes]]) -> Any:
    async def go() -> list[str]:
        seen: list[str] = []
        for path in [*spellings("/mcp")[:6], "/packs/alpha/mcp", "/packs/beta/mcp"]:
            for method, params, name in HUB_CALLS:
                for modern in (False, True):
                    headers, body = rpc(method, params, name, modern)
                    status, out = await asgi_request(app, "POST", path, headers + cred, body)
                    assert status != 500
                    seen += leaks(out, HUB_MARKERS)
        return seen

    return go()


@pytest.mark.parametrize(
    ("hub_keys", "cred", "opens"),
    [
        ((), "none", False),  # packs keyed, no hub key: the hub stays closed
        ((), "sk-alpha", False),  # a pack's key does not open the hub
        (("sk-hub",), "none", False),
        (("sk-hub",), "sk-alpha", False),
        (("sk-hub",), "sk-wrong", False),
        (("sk-hub",), "sk-hub", True),
    ],
)
def test_the_hub_opens_only_with_a_hub_key_when_packs_are_keyed(
    hub_serve: ServeContext, hub_keys: tuple[str, ...], cred: str, opens: bool
) -> None:
    keys = {"alpha": ["sk-alpha"], "beta": ["sk-beta"]}
    ring = KeyRing.build(keys, hub_keys)
    headers = [] if cred == "none" else [(b"authorization", f"Bearer {cred}".encode())]
    seen = run_app(hub_serve, ring, lambda app: hub_probe(app, headers))
    assert bool(seen) == opens, seen[:3]


def test_the_hub_is_open_on_a_server_with_no_keys_at_all(hub_serve: ServeContext) -> None:
    seen = run_app(hub_serve, KeyRing(), lambda app: hub_probe(app, []))
    assert "RENEWAL-CANARY" in seen


def test_the_hub_key_opens_the_hub_and_no_keyed_pack(hub_serve: ServeContext) -> None:
    ring = KeyRing.build({"alpha": ["sk-alpha"], "beta": ["sk-beta"]}, ["sk-hub"])

    async def fn(app: Any) -> None:
        cred = [(b"authorization", b"Bearer sk-hub")]
        for path in ("/mcp", "/packs/alpha/mcp"):
            for method, params, name, modern in calls():
                headers, body = rpc(method, params, name, modern)
                status, out = await asgi_request(app, "POST", path, headers + cred, body)
                assert status != 500
                assert not leaks(out, ALPHA_MARKERS + BETA_MARKERS), (path, method)

    run_app(hub_serve, ring, fn)


# -- a real uvicorn: the reported reproduction -------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _raw_http(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        chunks = []
        while True:
            try:
                data = s.recv(65536)
            except TimeoutError:
                break
            if not data:
                break
            chunks.append(data)
        return b"".join(chunks)


def test_the_reported_newline_bypass_is_closed_on_a_real_uvicorn(serve_ctx: Any) -> None:
    import uvicorn

    serve, ring = serve_ctx
    port = _free_port()
    app = create_app(serve, load_settings(data={}).server, ring)
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60  # bounds a hang only
        while not server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.05)
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "ep_list_topics", "arguments": {"pack": "alpha"}},
            }
        ).encode()
        for target in (b"/mcp%0A", b"/packs/alpha/mcp%0A", b"/mcp%0A?x=1", b"/mcp"):
            request = (
                b"POST " + target + b" HTTP/1.1\r\nHost: 127.0.0.1:" + str(port).encode() + b"\r\n"
                b"Content-Type: application/json\r\n"
                b"Accept: application/json, text/event-stream\r\n"
                b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n"
            ) + body
            out = _raw_http(port, request)
            status = int(out.split(b" ", 2)[1])
            assert status in (400, 401), (target, out[:300])
            assert not leaks(out, ALPHA_MARKERS), target
    finally:
        server.should_exit = True
        thread.join(timeout=20)


WORKBENCH = [
    "/packs/alpha/",
    "/packs/alpha/health",
    "/packs/alpha/eval",
    "/packs/ALPHA/health",
    "/ui/search?q=routing+moves+packets&pack=alpha",
    "/ui/search?q=routing+moves+packets",
    "/ui/read?pack=alpha&path=concepts/routing.md",
    "/ui/read?path=concepts/routing.md",
    "/ui/read?pack=beta&path=../alpha/concepts/routing.md",
    "/ui/read?pack=beta&id=alpha/concepts/routing",
    "/ui/read?pack=beta&path=escape.md",
    "/ui/health?pack=alpha",
    "/ui/eval?pack=alpha",
]


def test_workbench_pages_give_no_pack_content_without_its_key(serve_ctx: Any) -> None:
    """The browser pages and their fragments follow the same decision; a path naming another
    pack (`../alpha/...`, alpha's id) asked of beta with beta's key finds nothing."""
    serve, ring = serve_ctx

    async def fn(app: Any) -> None:
        for target in WORKBENCH:
            for cred in ("none", "wrong", "other-pack"):
                status, out = await asgi_request(app, "GET", target, CREDENTIALS[cred])
                assert status < 500, (target, cred)
                text = out.decode("utf-8", "replace")
                # the caller's own input may be echoed in an error; content never is
                found = [m for m in ALPHA_MARKERS if m in text and m not in target]
                assert not found, (target, cred, found)
                assert "TOP-SECRET-CANARY" not in text
        # the control: with alpha's key the same pages do show alpha's content
        key = [(b"authorization", b"Bearer sk-alpha")]
        status, out = await asgi_request(app, "GET", WORKBENCH[6], key)
        assert status == 200 and "Routing moves packets" in out.decode()

    run_app(serve, ring, fn)


SMUGGLED_PACK = [
    "/search?q=routing+moves+packets&pack=beta&pack=alpha",  # a repeated parameter
    "/search?q=routing+moves+packets&pack=alpha&pack=beta",
    "/search?q=routing+moves+packets&pack=ALPHA",
    "/search?q=routing+moves+packets&pack=alpha%00",
    "/search?q=routing+moves+packets&pack=%20alpha",
    "/search?q=routing+moves+packets&pack=beta/../alpha",
    "/search?q=routing+moves+packets&pack=beta,alpha",
    "/search?q=routing+moves+packets&pack[]=alpha",
    "/search?q=routing+moves+packets&Pack=alpha",
]
SMUGGLED_BODIES = [
    b'{"q": "routing moves packets", "pack": "beta", "pack": "alpha"}',  # a repeated key
    b'{"q": "routing moves packets", "pack": ["alpha"]}',
    b'{"q": "routing moves packets", "pack": {"slug": "alpha"}}',
    b'{"q": "routing moves packets", "packs": ["alpha"]}',
]


def test_another_packs_key_cannot_smuggle_the_keyed_pack_into_search(serve_ctx: Any) -> None:
    """beta's key, asking for alpha by a repeated parameter or key, another spelling of the
    slug, a list or an object: never alpha's content, never a 5xx."""
    serve, ring = serve_ctx
    beta_key = [(b"authorization", b"Bearer sk-beta")]

    async def fn(app: Any) -> None:
        for target in SMUGGLED_PACK:
            status, out = await asgi_request(app, "GET", target, beta_key)
            assert status < 500 and not leaks(out, ALPHA_MARKERS), (target, status, out[:300])
        json_type = [*beta_key, (b"content-type", b"application/json")]
        for body in SMUGGLED_BODIES:
            status, out = await asgi_request(app, "POST", "/search", json_type, body)
            assert status < 500 and not leaks(out, ALPHA_MARKERS), (body, status, out[:300])
        for arguments in (
            {"query": "routing moves packets", "pack": "ALPHA"},
            {"query": "routing moves packets", "pack": ["alpha"]},
            {"path": "../alpha/overview.md", "pack": "beta"},
            {"path": "alpha/overview.md"},
        ):
            name = "ep_read" if "path" in arguments else "ep_search"
            headers, body = rpc("tools/call", {"name": name, "arguments": arguments}, name, True)
            status, out = await asgi_request(
                app, "POST", "/packs/beta/mcp", beta_key + headers, body
            )
            assert status < 500 and not leaks(out, ALPHA_MARKERS), (arguments, status, out[:300])

    run_app(serve, ring, fn)
