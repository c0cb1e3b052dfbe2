"""The start-up build on its thread, as requests meet it: nothing reads an index before the
build has finished with it, nothing stalls the event loop while waiting, a failure is said."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client

from ep_mcp.errors import IndexDamagedError
from ep_mcp.library.runtime import Library, PackRuntime
from ep_mcp.serve import context, startup
from ep_mcp.serve.app import open_context
from ep_mcp.serve.auth import KeyRing
from ep_mcp.serve.context import ServeContext
from ep_mcp.serve.http import search_api
from ep_mcp.serve.http.app import create_app
from ep_mcp.serve.mcp.server import build_server


def hold_builds(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """From now on an index build waits for the returned event before it writes anything."""
    from ep_mcp.index.builder import build_index

    gate = threading.Event()

    def held_build(*args: Any, **kwargs: Any) -> Any:
        gate.wait(60)
        return build_index(*args, **kwargs)

    monkeypatch.setattr("ep_mcp.library.runtime.build_index", held_build)
    return gate


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    gate = hold_builds(monkeypatch)
    yield gate
    gate.set()


def _later(settings: Any) -> tuple[Library, ServeContext]:
    library = startup.open_packs(settings, None, build="later")
    serve, _ = open_context(settings, library=library)
    return library, serve


@contextlib.contextmanager
def building(library: Library, gate: threading.Event) -> Iterator[Future[None]]:
    """``library``'s start-up build running on a thread; on leaving, the held build is let go
    (``gate``), waited for, and the library closed."""
    finishing = startup.in_background(lambda: startup.finish(library), "ep-mcp-index")
    try:
        yield finishing
    finally:
        gate.set()
        finishing.result(timeout=30)
        library.close()


def _client(serve: ServeContext) -> httpx2.AsyncClient:
    app = create_app(serve, serve.library.settings.server, KeyRing.build({}, {}, ()))
    transport = httpx2.ASGITransport(app=app)
    return httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000")


def test_a_search_waiting_for_the_build_does_not_stall_health(
    fresh_packs: dict[str, Path],
    settings_for: Any,
    monkeypatch: pytest.MonkeyPatch,
    held: threading.Event,
) -> None:
    monkeypatch.setattr(context, "READY_WAIT_S", 3.0)
    library, serve = _later(settings_for(fresh_packs))
    assert serve.inline  # hashing: tool calls run on the event loop itself
    seen: dict[str, Any] = {"done": []}
    waiting = threading.Event()  # set once the search waits for the build
    real_until_ready = search_api.until_ready

    async def until_ready(*args: Any, **kwargs: Any) -> None:
        waiting.set()
        await real_until_ready(*args, **kwargs)

    monkeypatch.setattr(search_api, "until_ready", until_ready)
    with building(library, held):

        async def go() -> None:
            async with _client(serve) as c:

                async def search() -> None:
                    r = await c.get("/search", params={"q": "compost", "pack": "beta"})
                    seen["search"] = r.status_code, r.json()
                    seen["done"].append("search")

                async def health() -> None:
                    with anyio.fail_after(30):  # bounds a hang only
                        while not waiting.is_set():
                            await anyio.sleep(0.01)
                    r = await c.get("/health")
                    seen["phase"] = r.json()["index"]["phase"]
                    seen["done"].append("health")

                async with anyio.create_task_group() as tg:
                    tg.start_soon(search)
                    tg.start_soon(health)

        anyio.run(go)
        # order, not the wall clock: /health answered while the search was still waiting
        assert seen["done"] == ["health", "search"] and seen["phase"] == "indexing"
        status, body = seen["search"]
        assert status == 503 and "still being indexed" in body["error"]["message"]


def test_the_workbench_does_not_answer_from_the_index_of_before_the_restart(
    fresh_packs: dict[str, Path],
    settings_for: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = settings_for(fresh_packs)
    removed = fresh_packs["beta"] / "payroll.md"
    removed.write_text("# Payroll\n\nzebrasalary 123456 for the director.\n", encoding="utf-8")
    startup.open_packs(settings, None).close()  # an earlier run indexed it
    removed.unlink()  # then it was deleted, and the server restarted
    monkeypatch.setattr(context, "READY_WAIT_S", 0.3)
    gate = hold_builds(monkeypatch)  # only now: the earlier run above built unheld
    library, serve = _later(settings)
    with building(library, gate) as finishing:

        async def during() -> tuple[httpx2.Response, httpx2.Response]:
            async with _client(serve) as c:
                params = {"q": "zebrasalary", "pack": "beta"}
                return await c.get("/search", params=params), await c.get(
                    "/ui/search", params=params
                )

        api, ui = anyio.run(during)
        assert api.status_code == 503
        assert "123456" not in ui.text and "still being indexed" in ui.text
        gate.set()
        finishing.result(timeout=30)

        async def after() -> httpx2.Response:
            async with _client(serve) as c:
                return await c.get("/search", params={"q": "zebrasalary", "pack": "beta"})

        got = anyio.run(after)
        assert got.status_code == 200 and "123456" not in got.text


def test_a_call_waiting_for_the_build_runs_on_the_runtime_the_build_reopened(
    fresh_packs: dict[str, Path], settings_for: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = threading.Event()
    real_index = PackRuntime.index
    damaged: list[PackRuntime] = []

    def index(self: PackRuntime, *args: Any, **kwargs: Any) -> Any:
        if self.slug == "beta" and not damaged:  # beta's first update meets a damaged index
            damaged.append(self)
            gate.wait(30)
            raise IndexDamagedError("damaged (test)", path=self.store.path, reason="test")
        return real_index(self, *args, **kwargs)

    monkeypatch.setattr(PackRuntime, "index", index)
    library, serve = _later(settings_for(fresh_packs))
    with building(library, gate) as finishing:

        async def go() -> None:
            async with Client(build_server(serve)) as c:
                await c.read_resource("ep://beta/status")  # a status read meanwhile is fine
                threading.Timer(0.5, gate.set).start()
                r = await c.call_tool("ep_search", {"query": "compost greens", "pack": "beta"})
                assert not r.is_error, r.content
                assert r.structured_content["results"][0]["source_file"] == "compost.md"  # type: ignore[index]

        anyio.run(go)
        finishing.result(timeout=30)
        assert library.runtimes["beta"] is not damaged[0]


@pytest.mark.parametrize("failure", [RuntimeError("tokenizer failed"), OSError(28, "No space")])
def test_any_build_failure_is_logged_answered_to_every_call_and_shown_by_health(
    fresh_packs: dict[str, Path],
    settings_for: Any,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    failure: Exception,
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise failure

    monkeypatch.setattr("ep_mcp.library.runtime.build_index", broken)
    library, serve = _later(settings_for(fresh_packs))
    try:
        with caplog.at_level(logging.ERROR, logger="ep_mcp.serve.startup"):
            startup.finish(library)  # never raises into the server
        assert library.readiness.done.is_set() and "index build failed" in caplog.text

        async def go() -> None:
            async with Client(build_server(serve)) as c:
                r = await c.call_tool("ep_search", {"query": "compost", "pack": "beta"})
                assert r.is_error
                assert type(failure).__name__ in r.content[0].text  # type: ignore[union-attr]
            async with _client(serve) as http:
                health = await http.get("/health")
                assert health.status_code == 503 and health.json()["status"] == "error"

        anyio.run(go)
    finally:
        serve.library.close()


def test_a_call_waiting_for_the_build_hears_its_progress_when_it_asked(
    fresh_packs: dict[str, Path],
    settings_for: Any,
    held: threading.Event,
) -> None:
    library, serve = _later(settings_for(fresh_packs))
    heard: list[tuple[float, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        heard.append((done, message))

    with building(library, held):

        async def go() -> None:
            async with Client(build_server(serve)) as c:
                threading.Timer(1.5, held.set).start()
                r = await c.call_tool(
                    "ep_search",
                    {"query": "compost greens", "pack": "beta"},
                    progress_callback=progress,
                )
                assert not r.is_error, r.content

        anyio.run(go)
        assert heard and all("waiting for the index build" in (m or "") for _, m in heard)
        assert "beta indexing" in (heard[0][1] or "")
        assert [d for d, _ in heard] == sorted(d for d, _ in heard)


def test_a_request_waiting_for_the_build_hears_only_of_the_packs_it_may_see(
    fresh_packs: dict[str, Path],
    settings_for: Any,
    monkeypatch: pytest.MonkeyPatch,
    held: threading.Event,
) -> None:
    """alpha needs a key: a caller without one, told the packs are still being indexed, is not
    told that alpha exists (nor through MCP, nor through `/search`)."""
    monkeypatch.setattr(context, "READY_WAIT_S", 0.2)
    settings = settings_for(fresh_packs, alpha_keys=("sk-alpha",))
    library = startup.open_packs(settings, None, build="later")
    serve, ring = open_context(settings, library=library)
    with building(library, held):
        app = create_app(serve, settings.server, ring)

        async def go() -> tuple[httpx2.Response, str]:
            transport = httpx2.ASGITransport(app=app)
            async with httpx2.AsyncClient(
                transport=transport, base_url="http://127.0.0.1:8000"
            ) as c:
                api = await c.get("/search", params={"q": "compost", "pack": "beta"})
            async with Client(build_server(serve, ring.access(None, library.slugs(), False))) as m:
                r = await m.call_tool("ep_search", {"query": "compost", "pack": "beta"})
                return api, r.content[0].text  # type: ignore[union-attr]

        api, told = anyio.run(go)
        assert api.status_code == 503 and "beta indexing" in api.text
        assert "beta indexing" in told
        assert "alpha" not in api.text and "alpha" not in told


def test_stopping_during_the_start_up_build_finishes_the_current_pack_and_begins_no_other(
    fresh_packs: dict[str, Path],
    settings_for: Any,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from ep_mcp.index.builder import build_index
    from ep_mcp.serve import app

    gate, entered, built = threading.Event(), threading.Event(), []

    def held_build(pack: Any, *args: Any, **kwargs: Any) -> Any:
        entered.set()
        gate.wait(60)
        built.append(pack.slug)
        return build_index(pack, *args, **kwargs)

    monkeypatch.setattr("ep_mcp.library.runtime.build_index", held_build)
    library, serve = _later(settings_for(fresh_packs))
    starting = startup.in_background(lambda: startup.finish(library), "test-index")
    assert entered.wait(10)  # the first pack's build has begun

    def serve_then_stop() -> None:
        with app.closing(serve, starting):
            pass  # the server stops at once: closing waits for the start-up work

    with caplog.at_level(logging.INFO):
        stopper = threading.Thread(target=serve_then_stop)
        stopper.start()
        assert library.readiness.stopping.wait(10)
        gate.set()
        stopper.join(20)
    assert not stopper.is_alive() and starting.done()
    assert len(built) == 1  # the pack under way committed; the other was never begun
    assert "the server is stopping" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_call_waiting_for_the_build_is_told_at_once_when_the_server_stops(
    fresh_packs: dict[str, Path], settings_for: Any, held: threading.Event
) -> None:
    from ep_mcp.errors import BuildingError

    library, _ = _later(settings_for(fresh_packs))
    told: list[float] = []  # the waited seconds it was told at: one per READY_TELL_S of polls

    async def tell(waited: float, message: str) -> None:
        told.append(waited)

    async def go() -> None:
        async def stop_soon() -> None:
            await anyio.sleep(0.3)
            library.readiness.stopping.set()

        with anyio.fail_after(120):  # bounds a hang only
            async with anyio.create_task_group() as tg:
                tg.start_soon(stop_soon)
                with pytest.raises(BuildingError, match="the server is stopping"):
                    await context.until_ready(library, "call ep_search", tell)

    with building(library, held):
        anyio.run(go)
    # counted in polls, not the wall clock: told once, at the start — not the 30 s of polls a
    # waiting call is otherwise given (a busy machine only makes the polls fewer)
    assert told == [0.0]


def test_the_http_server_tells_the_build_when_a_stop_signal_arrives() -> None:
    import signal

    import uvicorn

    from ep_mcp.serve.app import _server_class

    told = threading.Event()
    server = _server_class()(uvicorn.Config(app=None), told.set)
    server.handle_exit(signal.SIGTERM, None)
    assert told.is_set() and server.should_exit
