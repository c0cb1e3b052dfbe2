"""The HTTP service through an ASGI client: /search, /packs, /health, errors, auth, guards."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx2
import pytest

from ep_mcp.serve.http.app import create_app

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
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
LEGACY = {**MCP_HEADERS, "MCP-Protocol-Version": "2025-06-18"}

Call = Callable[[httpx2.AsyncClient], Awaitable[None]]


def with_client(serve: Any, ring: Any, fn: Call, **server: Any) -> None:
    from ep_mcp.config.load import load_settings

    settings = load_settings(data={"server": server})
    app = create_app(serve, settings.server, ring)

    async def go() -> None:
        async with app.router.lifespan_context(app):
            transport = httpx2.ASGITransport(app=app)
            async with httpx2.AsyncClient(
                transport=transport, base_url="http://127.0.0.1:8000"
            ) as c:
                await fn(c)

    anyio.run(go)


def bearer(key: str | bytes) -> dict[str, Any]:
    return {"Authorization": (b"Bearer " + key) if isinstance(key, bytes) else f"Bearer {key}"}


def test_get_search_answers_with_hits_and_no_store_for_keyed_packs(serve_ctx: Any) -> None:
    serve, ring = serve_ctx

    async def fn(c: httpx2.AsyncClient) -> None:
        r = await c.get(
            "/search", params={"q": "tomatoes", "pack": "beta", "n": 2}, headers=bearer("sk-beta")
        )
        assert r.status_code == 200
        body = r.json()
        assert body["pack"] == "beta" and body["results"][0]["source_file"] == "gardening.md"
        r = await c.get(
            "/search",
            params={"q": "admin port", "pack": "alpha", "tags": "network", "reconstruct": "true"},
            headers=bearer("sk-alpha"),
        )
        assert r.status_code == 200 and r.headers["cache-control"] == "private, no-store"
        hits = [h for h in r.json()["results"] if not h["requires_expanded"]]
        assert hits and all("network" in h["tags"] for h in hits)

    with_client(serve, ring, fn)


@pytest.mark.parametrize("tags", [{"a": 1}, [1, 2], 7, [["x"]]])
def test_post_search_refuses_tags_that_are_not_text(serve_ctx: Any, tags: object) -> None:
    serve, ring = serve_ctx

    async def fn(c: httpx2.AsyncClient) -> None:
        r = await c.post(
            "/search",
            json={"q": "compost", "pack": "beta", "tags": tags},
            headers=bearer("sk-beta"),
        )
        assert r.status_code == 400 and "`tags` must be" in r.json()["error"]["message"]
        ok = await c.post(
            "/search",
            json={"q": "compost", "pack": "beta", "tags": ["a", "b"]},
            headers=bearer("sk-beta"),
        )
        assert ok.status_code == 200

    with_client(serve, ring, fn)


def test_post_search_checks_the_vector_dimension(serve_ctx: Any) -> None:
    serve, ring = serve_ctx
    dim = serve.library.get("beta").embedder.dimension

    async def fn(c: httpx2.AsyncClient) -> None:
        ok = await c.post(
            "/search", json={"q": "compost", "pack": "beta", "n": 3}, headers=bearer("sk-beta")
        )
        assert ok.status_code == 200 and ok.json()["results"]
        vec = await c.post(
            "/search",
            json={"q": "compost", "pack": "beta", "vector": [0.1] * dim},
            headers=bearer("sk-beta"),
        )
        assert vec.status_code == 200
        bad = await c.post(
            "/search",
            json={"q": "compost", "pack": "beta", "vector": [0.1] * 3},
            headers=bearer("sk-beta"),
        )
        assert bad.status_code == 422 and f"expects {dim}" in bad.json()["error"]["message"]
        nan = await c.post(
            "/search",
            content=b'{"q": "x", "pack": "beta", "vector": [NaN]}',
            headers=bearer("sk-beta"),
        )
        assert nan.status_code == 422

    with_client(serve, ring, fn)


@pytest.mark.parametrize(
    ("method", "url", "body", "status"),
    [
        ("GET", "/search?pack=beta", None, 400),
        ("GET", "/search?q=&pack=beta", None, 400),
        ("GET", "/search?q=x&pack=beta&n=abc", None, 400),
        ("GET", "/search?q=x&pack=beta&n=0", None, 422),
        ("GET", "/search?q=x&pack=beta&n=1000000000000", None, 400),
        ("GET", "/search?q=x&pack=beta&reconstruct=maybe", None, 400),
        ("GET", "/search?q=x&pack=nope", None, 403),  # like a pack the key does not open
        ("GET", "/search?q=" + "a" * 5000 + "&pack=beta", None, 422),
        ("POST", "/search", b"{not json", 400),
        ("POST", "/search", b"[1, 2]", 400),
        ("POST", "/search", b'{"q": 5, "pack": "beta"}', 400),
        ("POST", "/search", b"[" * 100_000, 400),
        ("GET", "/nowhere", None, 404),
        ("DELETE", "/search", None, 405),
    ],
)
def test_bad_input_gets_the_error_envelope_never_a_500(
    serve_ctx: Any, method: str, url: str, body: bytes | None, status: int
) -> None:
    serve, ring = serve_ctx

    async def fn(c: httpx2.AsyncClient) -> None:
        r = await c.request(method, url, content=body, headers=bearer("sk-beta"))
        assert r.status_code == status, r.text
        err = r.json()["error"]
        assert set(err) == {"code", "message"} and err["message"]

    with_client(serve, ring, fn)


def test_packs_lists_only_the_packs_the_callers_key_opens(serve_ctx: Any) -> None:
    serve, ring = serve_ctx

    async def fn(c: httpx2.AsyncClient) -> None:
        health = (await c.get("/health")).json()
        assert {k: health[k] for k in ("status", "packs")} == {"status": "ok", "packs": 2}
        assert health["index"]["phase"] == "ready" and health["index"]["mode"] == "hybrid"
        assert "alpha" not in str(health)  # no pack named to a caller without a key
        assert (await c.get("/packs")).json() == {"packs": []}
        r = await c.get("/packs", headers=bearer("sk-alpha"))
        packs = {p["slug"]: p for p in r.json()["packs"]}
        assert set(packs) == {"alpha"} and packs["alpha"]["auth"] == "api_key"
        r = await c.get("/packs", headers=bearer("sk-beta"))
        assert [p["mcp"] for p in r.json()["packs"]] == ["/packs/beta/mcp"]

    with_client(serve, ring, fn)


@pytest.mark.parametrize(
    ("headers", "url", "status"),
    [
        ({}, "/search?q=port&pack=alpha", 401),
        (bearer("wrong"), "/search?q=port&pack=alpha", 401),
        (bearer("sk-beta"), "/search?q=port&pack=alpha", 403),  # beta's key never opens alpha
        (bearer("sk-alpha"), "/search?q=port&pack=beta", 403),
        (bearer("sk-alpha"), "/search?q=port&pack=alpha", 200),
        (bearer("sk-beta"), "/search?q=port&pack=beta", 200),  # the env key EP_MCP_KEY_BETA
        ({"Authorization": "bearer   sk-alpha"}, "/search?q=port&pack=alpha", 200),
        ({"Authorization": "Basic sk-alpha"}, "/search?q=port&pack=alpha", 401),
        ({"Authorization": "Bearer"}, "/search?q=port&pack=alpha", 401),
        (bearer(b"\x80\xff\xfe sk"), "/search?q=port&pack=alpha", 401),
        (bearer(b"sk-alpha\xc3\xa9"), "/search?q=port&pack=alpha", 401),
        (bearer("k" * 16_000), "/search?q=port&pack=alpha", 401),
        ({}, "/search?q=port&pack=alpha&api_key=sk-alpha", 400),
    ],
)
def test_keys_are_checked_per_pack_on_search(
    serve_ctx: Any, headers: dict[str, Any], url: str, status: int
) -> None:
    serve, ring = serve_ctx

    async def fn(c: httpx2.AsyncClient) -> None:
        r = await c.get(url, headers=headers)
        assert r.status_code == status, r.text
        if status == 401:
            assert r.headers["www-authenticate"].startswith("Bearer")
        if status != 200:
            assert "TOP-SECRET" not in r.text and "sk-alpha" not in r.text

    with_client(serve, ring, fn)


@pytest.mark.parametrize(
    ("url", "headers", "status"),
    [
        ("/packs/alpha/mcp", {}, 401),
        ("/packs/alpha/mcp", bearer("sk-beta"), 403),
        ("/packs/alpha/mcp", bearer("nope"), 401),
        ("/packs/alpha/mcp", bearer("sk-alpha"), 200),
        ("/packs/beta/mcp", bearer("sk-beta"), 200),
        ("/packs/nope/mcp", bearer("sk-beta"), 403),
        ("/mcp", {}, 401),
        ("/mcp", bearer("nope"), 401),
        ("/mcp", bearer("sk-alpha"), 200),
    ],
)
def test_keys_are_checked_on_mcp_endpoints(
    serve_ctx: Any, url: str, headers: dict[str, Any], status: int
) -> None:
    serve, ring = serve_ctx

    async def fn(c: httpx2.AsyncClient) -> None:
        r = await c.post(url, json=INIT, headers={**MCP_HEADERS, **headers})
        assert r.status_code == status, r.text

    with_client(serve, ring, fn)


@pytest.mark.parametrize("headers", [{}, bearer("wrong"), bearer("sk-beta")])
def test_an_unknown_slug_is_answered_like_a_hidden_pack_so_no_caller_learns_which_exist(
    serve_ctx: Any, headers: dict[str, Any]
) -> None:
    serve, ring = serve_ctx

    async def answers(c: httpx2.AsyncClient, slug: str) -> list[tuple[int, str, str]]:
        out = []
        for r in (
            await c.post(f"/packs/{slug}/mcp", json=INIT, headers={**MCP_HEADERS, **headers}),
            await c.get("/search", params={"q": "port", "pack": slug}, headers=headers),
        ):
            text = r.json()["error"]["message"].replace(slug, "<slug>")
            out.append((r.status_code, text, r.headers.get("www-authenticate", "")))
        return out

    async def fn(c: httpx2.AsyncClient) -> None:
        hidden, unknown = await answers(c, "alpha"), await answers(c, "nope")
        assert hidden == unknown
        assert all(status in (401, 403) for status, _, _ in unknown)

    with_client(serve, ring, fn)


def test_without_any_key_an_unknown_slug_is_still_a_plain_404(open_ctx: Any) -> None:
    from ep_mcp.serve.auth import KeyRing

    async def fn(c: httpx2.AsyncClient) -> None:
        r = await c.post("/packs/nope/mcp", json=INIT, headers=MCP_HEADERS)
        assert r.status_code == 404 and "list the packs at /packs" in r.text
        r = await c.get("/search", params={"q": "port", "pack": "nope"})
        assert r.status_code == 404 and "packs you can search: alpha, beta" in r.text

    with_client(open_ctx, KeyRing(), fn)


def test_mcp_for_all_packs_shows_only_the_packs_the_key_opens(serve_ctx: Any) -> None:
    serve, ring = serve_ctx

    async def fn(c: httpx2.AsyncClient) -> None:
        hdrs = {**LEGACY, **bearer("sk-beta")}
        await c.post("/mcp", json=INIT, headers=hdrs)
        r = await c.post(
            "/mcp",
            headers=hdrs,
            json={"jsonrpc": "2.0", "id": 2, "method": "resources/list", "params": {}},
        )
        uris = [res["uri"] for res in r.json()["result"]["resources"]]
        assert uris and all(u.startswith("ep://beta/") for u in uris)
        r = await c.post(
            "/mcp",
            headers=hdrs,
            json={
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {
                    "name": "ep_read",
                    "arguments": {"pack": "alpha", "path": "overview.md"},
                },
            },
        )
        result = r.json()["result"]
        assert result["isError"] and "available packs: beta" in result["content"][0]["text"]
        r = await c.post(
            "/mcp",
            headers=hdrs,
            json={
                "jsonrpc": "2.0",
                "id": 4,
                "method": "resources/read",
                "params": {"uri": "ep://alpha/manifest"},
            },
        )
        assert r.json()["error"]["code"] == -32602

    with_client(serve, ring, fn)


def test_skills_methods_answer_raw_json_rpc(open_ctx: Any) -> None:
    from ep_mcp.serve.auth import KeyRing

    async def fn(c: httpx2.AsyncClient) -> None:
        await c.post("/packs/alpha/mcp", json=INIT, headers=LEGACY)
        r = await c.post(
            "/packs/alpha/mcp",
            headers=LEGACY,
            json={"jsonrpc": "2.0", "id": 2, "method": "skills/list", "params": {}},
        )
        result = r.json()["result"]
        assert result["cacheScope"] == "public" and result["ttlMs"] == 60_000
        (skill,) = result["skills"]
        assert skill["uri"] == "skill://alpha/SKILL.md"
        assert all(e["digest"].startswith("sha256:") and e["size"] > 0 for e in skill["resources"])
        r = await c.post(
            "/packs/alpha/mcp",
            headers=LEGACY,
            json={
                "jsonrpc": "2.0",
                "id": 3,
                "method": "skills/get",
                "params": {"uri": "skill://alpha/SKILL.md"},
            },
        )
        assert r.json()["result"]["skill"] == skill
        r = await c.post(
            "/packs/alpha/mcp",
            headers=LEGACY,
            json={
                "jsonrpc": "2.0",
                "id": 4,
                "method": "skills/get",
                "params": {"uri": "skill://x/SKILL.md"},
            },
        )
        assert r.json()["error"]["code"] == -32602
        r = await c.post(
            "/packs/alpha/mcp",
            headers=LEGACY,
            json={"jsonrpc": "2.0", "id": 5, "method": "skills/list", "params": {"cursor": "zz"}},
        )
        assert r.json()["error"]["code"] == -32602

    with_client(open_ctx, KeyRing(), fn)


@pytest.mark.parametrize("path", ["/health", "/search?q=x&pack=beta", "/mcp", "/packs/beta/mcp"])
@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Host": "evil.example.com"}, 421),
        ({"Host": "127.0.0.1.evil.com:8000"}, 421),
        ({"Origin": "http://evil.example.com"}, 403),
        ({"Origin": "null"}, 403),
        ({"Origin": "http://127.0.0.1.evil.com"}, 403),
        ({"Origin": "http://0.0.0.0:8000"}, 403),
        ({"Origin": "file://"}, 403),
    ],
)
def test_bad_host_or_origin_is_refused_on_every_route(
    open_ctx: Any, path: str, headers: dict[str, str], status: int
) -> None:
    from ep_mcp.serve.auth import KeyRing

    async def fn(c: httpx2.AsyncClient) -> None:
        method = "POST" if path.endswith("mcp") else "GET"
        r = await c.request(
            method,
            path,
            json=INIT if method == "POST" else None,
            headers={**MCP_HEADERS, **headers},
        )
        assert r.status_code == status
        assert "access-control-allow-origin" not in r.headers

    with_client(open_ctx, KeyRing(), fn)


def test_allowed_hosts_and_origins_from_settings_are_accepted(open_ctx: Any) -> None:
    from ep_mcp.serve.auth import KeyRing

    async def fn(c: httpx2.AsyncClient) -> None:
        r = await c.get(
            "/health", headers={"Host": "kb.example.com", "Origin": "https://app.example.com"}
        )
        assert r.status_code == 200
        r = await c.get("/health", headers={"Origin": "http://localhost:5173"})
        assert r.status_code == 200

    with_client(
        open_ctx,
        KeyRing(),
        fn,
        mcp_allowed_hosts=["kb.example.com"],
        mcp_allowed_origins=["https://app.example.com"],
    )


@pytest.mark.parametrize("path", ["/search", "/mcp", "/packs/beta/mcp"])
def test_oversized_bodies_get_413(open_ctx: Any, path: str) -> None:
    from ep_mcp.serve.auth import KeyRing

    async def fn(c: httpx2.AsyncClient) -> None:
        big = b'{"q": "' + b"a" * 2_000_000 + b'"}'
        r = await c.post(path, content=big, headers=MCP_HEADERS)
        assert r.status_code == 413 and r.json()["error"]["code"] == "payload_too_large"

        async def chunks() -> Any:
            for _ in range(30):
                yield b"a" * 100_000

        r = await c.post(path, content=chunks(), headers=MCP_HEADERS)
        assert r.status_code == 413

    with_client(open_ctx, KeyRing(), fn)


def test_query_log_writes_one_line_per_search_and_no_key(
    packs: Any, tmp_path: Any, settings_for: Any
) -> None:
    import json

    from ep_mcp.serve.app import open_context

    log = tmp_path / "q.jsonl"
    settings = settings_for(packs, alpha_keys=("sk-alpha",), query_log_path=str(log))
    serve, ring = open_context(settings)

    async def fn(c: httpx2.AsyncClient) -> None:
        await c.get("/search?q=compost&pack=beta")
        await c.get("/search?q=port&pack=alpha", headers=bearer("sk-alpha"))

    try:
        with_client(serve, ring, fn)
    finally:
        serve.library.close()
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(x["pack"], x["query"], x["via"]) for x in lines] == [
        ("beta", "compost", "http"),
        ("alpha", "port", "http"),
    ]
    assert "sk-alpha" not in log.read_text()


def test_past_the_limit_every_route_but_health_answers_429_with_retry_after(
    serve_ctx: Any,
) -> None:
    serve, ring = serve_ctx
    seen: list[int] = []

    async def fn(c: httpx2.AsyncClient) -> None:
        for _ in range(4):
            r = await c.get("/packs")
            seen.append(r.status_code)
        assert r.headers["Retry-After"].isdigit()
        assert r.json()["error"]["code"] == "rate_limited"
        assert (await c.get("/health")).status_code == 200

    with_client(serve, ring, fn, rate_limit_per_minute=3)
    assert seen == [200, 200, 200, 429]


@pytest.mark.parametrize(
    "headers",
    [
        [("Host", "[::1]evil.com")],
        [("Host", "[::1]:8000evil")],
        [("Host", "127.0.0.1:99999")],
        [("Host", "127.0.0.1:8000"), ("Host", "evil.example.com")],
        [("Host", "local host")],
        [("Origin", "http://127.0.0.1:8000"), ("Origin", "http://evil.example.com")],
        [("Origin", "http://user@127.0.0.1:8000")],
        [("Origin", "http://127.0.0.1:8000/path")],
        [("Origin", "javascript://127.0.0.1")],
    ],
)
def test_host_and_origin_parsing_is_strict(open_ctx: Any, headers: list[tuple[str, str]]) -> None:
    from ep_mcp.serve.auth import KeyRing

    async def fn(c: httpx2.AsyncClient) -> None:
        r = await c.get("/health", headers=httpx2.Headers(headers))
        assert r.status_code in (403, 421), r.text

    with_client(open_ctx, KeyRing(), fn)


@pytest.mark.parametrize(
    "origin", ["http://localhost", "http://127.0.0.1", "https://[::1]", "http://localhost:5173"]
)
def test_loopback_origins_with_or_without_a_port_are_accepted(open_ctx: Any, origin: str) -> None:
    from ep_mcp.serve.auth import KeyRing

    async def fn(c: httpx2.AsyncClient) -> None:
        assert (await c.get("/health", headers={"Origin": origin})).status_code == 200

    with_client(open_ctx, KeyRing(), fn)


def test_forwarded_for_is_ignored_unless_the_peer_is_a_configured_proxy(open_ctx: Any) -> None:
    from ep_mcp.serve.auth import KeyRing

    async def spoof(c: httpx2.AsyncClient) -> list[int]:
        out = []
        for i in range(3):
            r = await c.get("/packs", headers={"X-Forwarded-For": f"10.0.0.{i}"})
            out.append(r.status_code)
        return out

    seen: list[list[int]] = []

    async def untrusted(c: httpx2.AsyncClient) -> None:
        seen.append(await spoof(c))

    with_client(open_ctx, KeyRing(), untrusted, rate_limit_per_minute=1)
    # the ASGI test client's peer is 127.0.0.1: trusted only when configured
    with_client(
        open_ctx,
        KeyRing(),
        untrusted,
        rate_limit_per_minute=1,
        forwarded_allow_ips=["127.0.0.1"],
    )
    assert seen == [[200, 429, 429], [200, 200, 200]]
