"""The serving fast paths: cached validators, inline cheap searches, the bench client."""

from __future__ import annotations

import asyncio

import pytest
from click.testing import CliRunner

from ep_mcp.bench.serve import Connection
from ep_mcp.cli import main
from ep_mcp.errors import QueryError
from ep_mcp.index.embed import QueryEmbeddingCache
from ep_mcp.index.embed.fake import HashingEmbedder
from ep_mcp.serve.app import cheap_queries
from ep_mcp.tools.registry import get_tool, validate_arguments, validator_for


def test_a_tools_validator_is_built_once_and_still_rejects_bad_arguments() -> None:
    spec = get_tool("ep_search")
    assert validator_for(spec) is validator_for(spec)
    validate_arguments(spec, {"query": "install"})
    with pytest.raises(QueryError, match="ep_search"):
        validate_arguments(spec, {"query": 3})


def test_searches_run_inline_only_when_queries_cost_no_model() -> None:
    assert cheap_queries(None)
    assert cheap_queries(HashingEmbedder(32))
    assert cheap_queries(QueryEmbeddingCache(HashingEmbedder(32)))
    assert not cheap_queries(object())


def test_workers_need_the_http_transport() -> None:
    result = CliRunner().invoke(main, ["serve", "--workers", "2"])
    assert result.exit_code != 0
    assert "--transport http" in result.output


async def _serve_once(bodies: list[bytes]) -> tuple[list[tuple[int, bytes]], int]:
    """A tiny HTTP/1.1 server answering each request on one connection with the next body."""
    connections = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        for body in bodies:
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            await reader.readexactly(length)
            if body.startswith(b"chunked:"):
                payload = body[len(b"chunked:") :]
                writer.write(
                    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + f"{len(payload):x}\r\n".encode()
                    + payload
                    + b"\r\n0\r\n\r\n"
                )
            else:
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    conn = Connection("127.0.0.1", port)
    out = [await conn.request("POST", "/x", b"{}") for _ in bodies]
    await conn.close()
    server.close()
    await server.wait_closed()
    return out, connections


def test_the_bench_client_reuses_one_connection_and_reads_both_body_framings() -> None:
    out, connections = asyncio.run(_serve_once([b'{"a": 1}', b'chunked:{"b": 2}']))
    assert out == [(200, b'{"a": 1}'), (200, b'{"b": 2}')]
    assert connections == 1


@pytest.mark.parametrize(
    ("transport", "watching", "cpus", "workers"),
    [
        ("http", False, 2, 2),
        ("http", False, 16, 4),
        ("http", False, 1, 1),
        ("http", True, 8, 1),
        ("stdio", False, 8, 1),
    ],
)
def test_http_without_watching_defaults_to_a_worker_per_cpu_up_to_four(
    transport: str, watching: bool, cpus: int, workers: int
) -> None:
    from ep_mcp.cli.serve_cmds import default_workers

    assert default_workers(transport, watching, cpus) == workers
