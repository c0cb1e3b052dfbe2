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

from ep_mcp.library.backfill import Backfill
from ep_mcp.serve.app import open_context
from ep_mcp.serve.auth import KeyRing
from ep_mcp.serve.http.app import create_app
from ep_mcp.serve.mcp.server import build_server

CLI = [sys.executable, "-c", "from ep_mcp.cli import main; main()"]


async def status(c: Client, slug: str) -> dict[str, Any]:
    got = await c.read_resource(f"ep://{slug}/status")
    return json.loads(got.contents[0].text)  # type: ignore[union-attr]


def test_a_fresh_pack_answers_lexically_at_once_and_hybrid_after_the_backfill(
    fresh_packs: dict[str, Path], settings_for: Any
) -> None:
    serve, _ = open_context(settings_for(fresh_packs), words_first=True)
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
    serve, _ = open_context(settings_for(fresh_packs), words_first=True)
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


def test_the_handshake_does_not_wait_for_the_index_build_and_tools_wait_for_it(
    fresh_packs: dict[str, Path], settings_for: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`serve` opens the packs, answers, and builds on a thread: a tool call meanwhile waits
    for the build (a status read does not), then answers from the whole index."""
    import threading

    from ep_mcp.index.builder import build_index
    from ep_mcp.serve import context, startup

    gate = threading.Event()
    real_build = build_index

    def held_build(*args: Any, **kwargs: Any) -> Any:
        gate.wait(30)  # the build cannot finish before the test lets it
        return real_build(*args, **kwargs)

    monkeypatch.setattr("ep_mcp.library.runtime.build_index", held_build)
    settings = settings_for(fresh_packs)
    library = startup.open_packs(settings, None, build="later")
    serve, _ = open_context(settings, library=library)
    try:
        assert not library.readiness.done.is_set()
        server = build_server(serve)

        async def during() -> None:
            async with Client(server) as c:  # the handshake: answered while nothing is built
                state = await status(c, "beta")
                assert state["phase"] == "indexing" and state["mode"] == "lexical"
                monkeypatch.setattr(context, "READY_WAIT_S", 0.2)
                r = await c.call_tool("ep_search", {"query": "compost greens", "pack": "beta"})
                assert r.is_error
                text = r.content[0].text  # type: ignore[union-attr]
                assert "still being indexed" in text and "beta indexing" in text
                monkeypatch.setattr(context, "READY_WAIT_S", 30.0)
                threading.Timer(0.3, gate.set).start()  # the build goes on while it waits
                r = await c.call_tool("ep_search", {"query": "compost greens", "pack": "beta"})
                assert not r.is_error, r.content
                assert r.structured_content["results"][0]["source_file"] == "compost.md"  # type: ignore[index]

        builder_thread = startup.in_background(lambda: startup.finish(library), "ep-mcp-index")
        anyio.run(during)
        builder_thread.result(timeout=30)
        assert library.readiness.done.is_set()
        assert {rt.build_state()["phase"] for rt in library} == {"lexical-only"}  # no embedder
    finally:
        gate.set()
        serve.library.close()


def test_a_start_up_build_that_fails_is_answered_to_every_tool_call(
    fresh_packs: dict[str, Path], settings_for: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ep_mcp.errors import IndexBuildError
    from ep_mcp.serve import startup

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise IndexBuildError("disk full while writing the index — free some space")

    monkeypatch.setattr("ep_mcp.library.runtime.build_index", broken)
    settings = settings_for(fresh_packs)
    library = startup.open_packs(settings, None, build="later")
    serve, _ = open_context(settings, library=library)
    try:
        startup.finish(library)  # logs the failure, never raises into the server
        assert library.readiness.done.is_set()

        async def call() -> None:
            async with Client(build_server(serve)) as c:
                r = await c.call_tool("ep_search", {"query": "compost", "pack": "beta"})
                assert r.is_error and "disk full" in r.content[0].text  # type: ignore[union-attr]

        anyio.run(call)
    finally:
        serve.library.close()
