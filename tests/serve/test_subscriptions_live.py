"""Resource subscriptions on real servers: `ep-mcp serve --watch` over stdio (both eras) and
over Streamable HTTP on uvicorn (2026-07-28 listen streams; none in the stateless 2025 era)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx2
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ResourceUpdated
from mcp.shared.exceptions import MCPError

from conftest import wait_healthy

pytestmark = pytest.mark.filterwarnings(
    "ignore:resources/(un)?subscribe is removed:mcp.shared.exceptions.MCPDeprecationWarning"
)
CLI = [sys.executable, "-c", "from ep_mcp.cli import main; main()"]
GARDENING = "ep://beta/file/gardening.md"
ATTEMPTS, ATTEMPT_S = 20, 5.0  # a bounded poll: the watcher may not be watching yet


async def until_told(write: Callable[[int], None], told: Callable[[], Awaitable[object]]) -> object:
    """Edit (``write``) until the server tells of it (``told``): the server's watcher starts
    on its own thread, so the first edits may come before it watches."""
    for attempt in range(ATTEMPTS):
        write(attempt)
        with anyio.move_on_after(ATTEMPT_S):
            return await told()
    raise AssertionError(f"no notification after {ATTEMPTS} edits")


def gardening(packs: dict[str, Path]) -> Callable[[int], None]:
    def write(attempt: int) -> None:
        (packs["beta"] / "gardening.md").write_text(f"# Gardening\n\nEdit {attempt}.\n")

    return write


@pytest.fixture
def copied(packs: dict[str, Path], tmp_path: Path) -> dict[str, Path]:
    """Copies of the module's packs: these tests edit them."""
    out = {}
    for name in ("alpha", "beta"):
        out[name] = Path(shutil.copytree(packs[name], tmp_path / name, symlinks=True))
    return out


def test_stdio_sessions_of_both_eras_hear_of_an_edit(
    copied: dict[str, Path], tmp_path: Path
) -> None:
    args = [*CLI[1:], "serve", str(copied["alpha"]), str(copied["beta"])]
    params = StdioServerParameters(
        command=CLI[0],
        args=[*args, "--provider", "hashing", "--watch"],
        env={**os.environ, "EP_MCP_HOME": str(tmp_path / "home")},
    )

    async def go() -> None:
        send, receive = anyio.create_memory_object_stream[str](100)

        async def inbox(message: object) -> None:
            root = getattr(message, "root", message)
            if isinstance(root, types.ResourceUpdatedNotification):
                send.send_nowait(str(root.params.uri))

        async with Client(params, mode="legacy", message_handler=inbox) as c:
            caps = c.server_capabilities.resources
            assert caps is not None and caps.subscribe and caps.list_changed
            await c.subscribe_resource(GARDENING)
            assert await until_told(gardening(copied), receive.receive) == GARDENING
        async with Client(params) as c, c.listen(resource_subscriptions=[GARDENING]) as sub:
            got = await until_told(gardening(copied), sub.__anext__)
            assert got == ResourceUpdated(uri=GARDENING)

    anyio.run(go)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server(copied: dict[str, Path], tmp_path: Path) -> Iterator[tuple[str, Any]]:
    config = tmp_path / "config.yaml"
    config.write_text(
        f"packs:\n  - path: {copied['alpha']}\n    api_keys: [sk-alpha]\n"
        f"  - path: {copied['beta']}\n    slug: beta\n"
        "embedding:\n  provider: hashing\n",
        encoding="utf-8",
    )
    port, log = free_port(), tmp_path / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*CLI, "serve", "--config", str(config), "--port", str(port), "--watch"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "EP_MCP_HOME": str(tmp_path / "home")},
        )
        base = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(base, proc, log, 60)
            yield base, proc
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)


def client(url: str, key: str | None = None, mode: str = "auto") -> Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    http = httpx2.AsyncClient(headers=headers, timeout=30)
    return Client(streamable_http_client(url, http_client=http), mode=mode)


def test_http_listen_streams_hear_of_edits_and_end_when_the_server_stops(
    http_server: Any, copied: dict[str, Path]
) -> None:
    base, proc = http_server
    alpha = "ep://alpha/file/overview.md"

    async def go() -> None:
        async with client(f"{base}/mcp", mode="legacy") as c:  # stateless: nothing to carry
            caps = c.server_capabilities.resources
            assert caps is not None and not caps.subscribe
        async with client(f"{base}/mcp") as c:  # no key: the keyed pack is not there
            with pytest.raises(MCPError) as read:
                await c.read_resource(alpha)
            with pytest.raises(MCPError) as listen:
                async with c.listen(resource_subscriptions=[alpha]):
                    pass
            assert listen.value.error == read.value.error, (listen.value.error, read.value.error)
        async with (
            client(f"{base}/packs/alpha/mcp", "sk-alpha") as keyed,
            keyed.listen(resource_subscriptions=[alpha]) as on_alpha,
            client(f"{base}/mcp") as c,
            c.listen(resource_subscriptions=[GARDENING]) as sub,
        ):
            assert c.server_capabilities.resources.subscribe  # type: ignore[union-attr]
            assert await until_told(gardening(copied), sub.__anext__) == ResourceUpdated(
                uri=GARDENING
            )

            def overview(attempt: int) -> None:
                (copied["alpha"] / "overview.md").write_text(f"# Overview\n\nEdit {attempt}.\n")

            assert await until_told(overview, on_alpha.__anext__) == ResourceUpdated(uri=alpha)
            proc.terminate()  # open streams end gracefully; they do not hold the server up
            # the listen streams' graceful end (StopAsyncIteration, not SubscriptionLost)
            with anyio.fail_after(30), pytest.raises(StopAsyncIteration):
                await sub.__anext__()
            # uvicorn re-raises the SIGTERM it handled once it has shut down
            assert await anyio.to_thread.run_sync(proc.wait, 30) == -signal.SIGTERM

    anyio.run(go)


def test_one_caller_cannot_hold_every_listen_stream(http_server: Any) -> None:
    from ep_mcp.serve.http.app import MAX_LISTENS_PER_CALLER

    base, _ = http_server

    async def go() -> None:
        sent: list[httpx2.Request] = []  # the SDK's own listen requests, to replay one raw

        async def record(request: httpx2.Request) -> None:
            if b"subscriptions/listen" in request.content:
                sent.append(request)

        async with contextlib.AsyncExitStack() as stack:
            http = httpx2.AsyncClient(timeout=30, event_hooks={"request": [record]})
            c = await stack.enter_async_context(
                Client(streamable_http_client(f"{base}/mcp", http_client=http))
            )
            for _ in range(MAX_LISTENS_PER_CALLER):
                await stack.enter_async_context(c.listen(resource_subscriptions=[GARDENING]))
            raw = await stack.enter_async_context(httpx2.AsyncClient(timeout=30))
            headers = {k: v for k, v in sent[0].headers.items() if k.lower() != "content-length"}
            content = sent[0].content
            async with raw.stream("POST", f"{base}/mcp", content=content, headers=headers) as r:
                assert r.status_code == 429  # (a stream that opened would answer 200 here)
                body = json.loads(await r.aread())
            assert body["error"]["message"].startswith(
                f"this caller already holds {MAX_LISTENS_PER_CALLER} open subscriptions/listen"
            )
            with pytest.raises(MCPError):  # the SDK client is refused too
                async with c.listen(resource_subscriptions=[GARDENING]):
                    pass
            # another credential is not held up by this caller's streams
            keyed = await stack.enter_async_context(client(f"{base}/packs/alpha/mcp", "sk-alpha"))
            alpha = "ep://alpha/file/overview.md"
            await stack.enter_async_context(keyed.listen(resource_subscriptions=[alpha]))
        # the streams ended with their clients: the caller may listen again
        async with client(f"{base}/mcp") as c, c.listen(resource_subscriptions=[GARDENING]):
            pass

    anyio.run(go)
