"""A configured reranker, end to end: `ep_search` over MCP and `GET /search` reorder by it,
`rerank: false` skips it for one query, and a reranker that hangs costs the query its budget
and leaves the order as it was, with a note."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from starlette.testclient import TestClient

from ep_mcp.config.load import load_settings
from ep_mcp.serve.app import open_context
from ep_mcp.serve.auth import KeyRing
from ep_mcp.serve.mcp.server import build_server
from fake_rerankers import FakeRerankServer, serve

# By words the eruption page comes first and the loaf last; the fake reranker prefers any
# passage saying "sourdough", so with it the loaf is first.
PACK = {
    "eruptions.md": "# Eruptions\n\nWhen magma pressure builds, the volcano erupts and lava "
    "flows from the vent.\n",
    "lava.md": "# Lava\n\nLava cools into basalt.\n",
    "bread.md": "# Bread\n\nA volcano-shaped sourdough loaf needs a lively starter.\n",
}
QUERY = "why does a volcano erupt lava"


@pytest.fixture
def reranker() -> Iterator[FakeRerankServer]:
    with serve() as fake:
        fake.prefer = "sourdough"
        yield fake


@pytest.fixture
def served(
    make_pack: Callable[..., Path], tmp_path: Path, reranker: FakeRerankServer
) -> Iterator[Any]:
    pack = make_pack(PACK, name="volcanoes")
    settings = load_settings(
        data={
            "packs": [str(pack)],
            "embedding": {"provider": "none"},
            "server": {"watch": False},
            "reranker": {
                "enabled": True,
                "kind": "http",
                "endpoint": f"{reranker.url}/v1/rerank",
                "model": "bge-reranker-base",
                "budget_ms": 500,
            },
        }
    )
    serve_ctx, _ = open_context(dataclasses.replace(settings, home=tmp_path / "home"))
    yield serve_ctx
    serve_ctx.library.close()


def search(served: Any, **arguments: object) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with Client(build_server(served)) as c:
            r = await c.call_tool("ep_search", {"query": QUERY, **arguments})
            assert not r.is_error, r.content
            return dict(r.structured_content or {})

    return anyio.run(go)


def files(result: dict[str, Any]) -> list[str]:
    return [h["source_file"] for h in result["results"]]


def test_the_reranker_reorders_what_ep_search_answers(
    served: Any, reranker: FakeRerankServer
) -> None:
    plain = search(served, rerank=False)
    assert files(plain)[0] == "eruptions.md" and files(plain)[-1] == "bread.md"
    assert reranker.seen == []
    reranked = search(served)
    assert files(reranked)[0] == "bread.md"
    (request,) = reranker.seen
    assert request[2]["query"] == QUERY and len(request[2]["documents"]) == len(plain["results"])


def test_get_search_takes_rerank_false_too(served: Any, reranker: FakeRerankServer) -> None:
    from ep_mcp.serve.http.app import create_app

    app = create_app(served, served.library.settings.server, KeyRing())
    with TestClient(app, base_url="http://127.0.0.1:8000") as http:
        off = http.get("/search", params={"q": QUERY, "rerank": "false"}).json()
        on = http.get("/search", params={"q": QUERY}).json()
    assert files(off)[0] == "eruptions.md" and files(on)[0] == "bread.md"
    assert len(reranker.seen) == 1


def test_a_hanging_reranker_leaves_the_order_and_says_so(
    served: Any, reranker: FakeRerankServer
) -> None:
    reranker.hang = True
    try:
        result = search(served)
    finally:
        reranker.release.set()
    assert files(result) == files(search(served, rerank=False))
    assert any(
        "took longer than its 500 ms budget" in n and "unreranked order" in n
        for n in result["notes"]
    )


def test_bench_query_reports_what_the_reranker_adds(
    served: Any, reranker: FakeRerankServer
) -> None:
    from ep_mcp.bench.query import query_latency

    rt = served.library.get(None)
    rows = {row.label: row for row in query_latency(rt, [QUERY, "lava cools"], repeats=2)}
    assert rows["reranker off"].queries == 4
    assert rows["http/bge-reranker-base, no cached score"].queries == 4
    warm_up = 2  # the bench runs each query once before measuring
    assert len(reranker.seen) == warm_up + 4  # every measured reranked query reached it
