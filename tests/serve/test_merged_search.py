"""Search without `pack` on a multi-pack server: every pack the caller may see, one ranking."""

from __future__ import annotations

from typing import Any

import anyio
import httpx2
from mcp import Client

from ep_mcp.serve.auth import Access
from ep_mcp.serve.http.app import create_app
from ep_mcp.serve.mcp.server import build_server

QUERY = "routing packets and watering tomatoes"


def get(serve: Any, ring: Any, url: str, key: str | None = None) -> httpx2.Response:
    from ep_mcp.config.load import load_settings

    app = create_app(serve, load_settings(data={"server": {}}).server, ring)
    headers = {"Authorization": f"Bearer {key}"} if key else {}

    async def go() -> httpx2.Response:
        async with app.router.lifespan_context(app):
            transport = httpx2.ASGITransport(app=app)
            async with httpx2.AsyncClient(
                transport=transport, base_url="http://127.0.0.1:8000"
            ) as c:
                return await c.get(url, headers=headers)

    return anyio.run(go)


def test_search_without_pack_merges_every_open_pack_and_names_each_hit(open_ctx: Any) -> None:
    from ep_mcp.serve.auth import KeyRing

    r = get(open_ctx, KeyRing(), f"/search?q={QUERY}&n=10")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["packs"] == ["alpha", "beta"] and "pack" not in body
    named = {(h["pack"], h["source_file"]) for h in body["results"]}
    assert ("alpha", "concepts/routing.md") in named and ("beta", "gardening.md") in named
    scores = [h["score"] for h in body["results"]]
    assert scores == sorted(scores, reverse=True)


def test_search_with_pack_still_searches_only_that_pack(open_ctx: Any) -> None:
    from ep_mcp.serve.auth import KeyRing

    body = get(open_ctx, KeyRing(), f"/search?q={QUERY}&pack=beta").json()
    assert body["pack"] == "beta" and "packs" not in body
    assert body["results"] and all("pack" not in h for h in body["results"])


def test_a_merged_search_covers_only_the_packs_the_key_opens(serve_ctx: Any) -> None:
    serve, ring = serve_ctx
    r = get(serve, ring, f"/search?q={QUERY}", key="sk-beta")  # one pack opens: searched alone
    assert r.status_code == 200 and r.json()["pack"] == "beta"
    assert {h["source_file"] for h in r.json()["results"]} <= {"gardening.md", "compost.md"}
    assert r.headers["cache-control"] == "private, no-store"
    assert get(serve, ring, f"/search?q={QUERY}").status_code == 401  # no key: nothing opens
    assert get(serve, ring, f"/search?q={QUERY}", key="sk-wrong").status_code == 401


def test_mcp_search_without_pack_merges_only_the_callers_packs(open_ctx: Any) -> None:
    async def search(access: Access | None) -> dict[str, Any]:
        server = build_server(open_ctx, access) if access else build_server(open_ctx)
        async with Client(server) as c:
            r = await c.call_tool("ep_search", {"query": QUERY})
            assert not r.is_error, r.content
            assert r.structured_content is not None
            return r.structured_content

    both = anyio.run(search, None)
    assert both["packs"] == ["alpha", "beta"]
    assert {h["pack"] for h in both["results"]} == {"alpha", "beta"}
    only = anyio.run(search, Access(frozenset({"beta"})))  # one pack visible: a plain search
    assert only["pack"] == "beta" and all("pack" not in h for h in only["results"])


def test_a_key_merges_its_keyed_pack_with_the_open_ones(packs: Any, settings_for: Any) -> None:
    from ep_mcp.serve.app import open_context

    serve, ring = open_context(settings_for(packs, alpha_keys=("sk-alpha",)))
    try:
        keyed = get(serve, ring, f"/search?q={QUERY}", key="sk-alpha").json()
        assert keyed["packs"] == ["alpha", "beta"]
        anonymous = get(serve, ring, f"/search?q={QUERY}").json()
        assert anonymous["pack"] == "beta"  # alpha stays closed without its key
        assert "Routing moves packets" not in str(anonymous)
    finally:
        serve.library.close()
