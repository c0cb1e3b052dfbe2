"""First contact: the server answers at once, by words, and turns hybrid once vectors are in."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters

from ep_mcp.serve.app import open_context
from ep_mcp.serve.auth import KeyRing
from ep_mcp.serve.backfill import Backfill
from ep_mcp.serve.http_app import create_app
from ep_mcp.serve.mcp_server import build_server

CLI = [sys.executable, "-c", "from ep_mcp.cli import main; main()"]


async def status(c: Client, slug: str) -> dict[str, Any]:
    got = await c.read_resource(f"ep://{slug}/status")
    return json.loads(got.contents[0].text)  # type: ignore[union-attr]


def test_a_fresh_pack_answers_lexically_at_once_and_hybrid_after_the_backfill(
    fresh_packs: dict[str, Path], settings_for: Any
) -> None:
    serve, _ = open_context(settings_for(fresh_packs), lexical_first=True)
    try:
        server = build_server(serve)

        async def search(c: Client) -> dict[str, Any]:
            r = await c.call_tool("ep_search", {"query": "compost greens", "pack": "beta"})
            assert not r.is_error, r.content
            return r.structured_content  # type: ignore[return-value]

        async def before() -> None:
            async with Client(server) as c:
                first = await search(c)
                assert first["mode"] == "lexical"
                assert first["results"][0]["source_file"] == "compost.md"
                state = await status(c, "beta")
                assert state["phase"] == "lexical" and state["mode"] == "lexical"
                assert state["pending"] == state["chunks"] > 0 and state["embedded"] == 0

        async def after() -> None:
            async with Client(server) as c:
                assert (await search(c))["mode"] == "hybrid"
                state = await status(c, "beta")
                assert state["phase"] == "ready" and state["pending"] == 0

        anyio.run(before)
        assert Backfill(serve.library, interval_s=30.0).run_once() > 0
        anyio.run(after)
    finally:
        serve.library.close()


def test_while_the_vectors_are_computed_answers_say_so_and_health_shows_the_progress(
    fresh_packs: dict[str, Path], settings_for: Any
) -> None:
    serve, _ = open_context(settings_for(fresh_packs), lexical_first=True)
    try:
        rt = serve.library.get("beta")
        app = create_app(serve, serve.library.settings.server, KeyRing.build({}, {}, ()))

        async def health() -> dict[str, Any]:
            transport = httpx2.ASGITransport(app=app)
            async with httpx2.AsyncClient(
                transport=transport, base_url="http://127.0.0.1:8000"
            ) as c:
                got = (await c.get("/health")).json()
                assert "index" in got, got
                return got  # type: ignore[no-any-return]

        with rt.building.running():
            rt.building.observe(1, 4)
            from ep_mcp.retrieval.types import SearchRequest

            notes = rt.search(SearchRequest(query="compost")).notes
            assert notes[0].startswith("index building: this answer is lexical (words only)")
            index = anyio.run(health)["index"]
            assert index["phase"] == "embedding" and index["mode"] == "lexical"
            assert index["pending"] > 0
        assert rt.build_state()["phase"] == "lexical"  # stopped before its vectors were in
    finally:
        serve.library.close()


@pytest.mark.parametrize("transport", ["stdio"])
def test_serve_over_stdio_with_the_real_model_initialises_before_embedding_and_turns_hybrid(
    make_pack: Any, transport: str
) -> None:
    """The acceptance path with the local model: the first answer is lexical, later hybrid.
    (How fast is measured by `ep-mcp bench index`, not asserted here.)"""
    root = make_pack(
        {
            f"topic{i}.md": f"# Topic {i}\n\nCompost needs greens, browns, air and water {i}.\n"
            + " ".join(f"word{i}x{j}" for j in range(40))
            for i in range(60)
        }
    )
    params = StdioServerParameters(
        command=CLI[0], args=[*CLI[1:], "serve", str(root), "--no-watch"], env=dict(os.environ)
    )

    async def go() -> None:
        with anyio.fail_after(120):
            async with Client(params) as c:
                r = await c.call_tool("ep_search", {"query": "compost greens"})
                first = r.structured_content["mode"]  # type: ignore[index]
                # lexical unless this machine embedded 60 chunks before the first call
                assert first == "lexical" or first == "hybrid"
                assert (await status(c, "pack"))["chunks"] == 60
                while (await status(c, "pack"))["phase"] != "ready":
                    await anyio.sleep(0.1)  # polls the server; bounded by fail_after
                r = await c.call_tool("ep_search", {"query": "compost greens"})
                assert r.structured_content["mode"] == "hybrid"  # type: ignore[index]

    anyio.run(go)
