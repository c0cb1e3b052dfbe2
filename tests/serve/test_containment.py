"""0 bytes of `.git/*`, dot-files or outside files through any tool, resource or CLI command;
a FIFO swapped into a served pack never blocks a search."""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client
from mcp.shared.exceptions import MCPError

from ep_mcp.cli import main
from ep_mcp.config.load import load_settings
from ep_mcp.serve.mcp.server import build_server
from ep_mcp.tools.registry import ToolContext, call_tool

from .conftest import write_pack

CANARY = "zebracanary"
PACK = {
    "manifest.yaml": "slug: vault\nname: Vault\ntype: product\n"
    "mcp:\n  skills:\n    enabled: true\n",
    "good.md": "---\ntitle: Good\ntype: concept\n---\n# Good\n\nRouters forward packets.\n",
    "docs/ports.md": "---\ntitle: Ports\ntype: concept\n---\n# Ports\n\n"
    "Port 8080 is the admin port of the router.\n\n## Firewall\n\nClose the other ports.\n",
}


def _settings(root: Path, home: Path) -> Any:
    data = {
        "packs": [{"path": str(root)}],
        "embedding": {"provider": "hashing"},
        "server": {"watch": False},
    }
    return dataclasses.replace(load_settings(data=data), home=home)


@pytest.fixture
def vault(tmp_path: Path, plant_hostile: Callable[..., Any]) -> tuple[Path, Any]:
    root = write_pack(tmp_path / "vault", PACK)
    outside = tmp_path / "outside"
    outside.mkdir()
    return root, plant_hostile(root, outside, "good.md")


@pytest.fixture
def ctx(vault: tuple[Path, Any], tmp_path: Path) -> Iterator[Any]:
    from ep_mcp.serve.app import open_context

    serve, _ = open_context(_settings(vault[0], tmp_path / "home"))
    yield serve
    serve.library.close()


def _clean(text: str) -> None:
    assert CANARY not in text


def _answer(data: dict[str, Any]) -> str:
    """A search response without the echo of the query itself."""
    return json.dumps({k: v for k, v in data.items() if k != "query"})


def _queries(hostile: Any) -> list[str]:
    return [CANARY, *(c.replace("-", " ") for c in hostile.canaries), "secret ep config"]


def test_no_tool_or_resource_serves_a_hidden_linked_or_outside_file(
    ctx: Any, vault: tuple[Path, Any]
) -> None:
    _, hostile = vault
    server = build_server(ctx)

    async def go() -> None:
        async with Client(server) as c:
            for rel in hostile.requests:
                for key in ("path", "id"):
                    r = await c.call_tool("ep_read", {"pack": "vault", key: rel})
                    _clean(json.dumps([b.model_dump() for b in r.content]))
                    assert r.is_error or r.structured_content["path"] == "good.md", rel
                for uri in (f"ep://vault/file/{quote(rel)}", f"skill://vault/{quote(rel)}"):
                    try:
                        res = await c.read_resource(uri)
                    except MCPError as exc:
                        _clean(exc.error.message)
                    else:  # pragma: no cover - any success is a failure
                        raise AssertionError(f"{uri!r} was served: {res.contents[0]!r}")
            for query in _queries(hostile):
                for reconstruct in (False, True):
                    args = {"pack": "vault", "query": query, "reconstruct": reconstruct}
                    r = await c.call_tool("ep_search", args)
                    _clean(_answer(r.structured_content))
            r = await c.call_tool("ep_list_topics", {"pack": "vault"})
            _clean(json.dumps(r.structured_content))
            listed = (await c.list_resources()).resources
            _clean(" ".join(str(x.uri) for x in listed))
            for res in listed:
                for content in (await c.read_resource(str(res.uri))).contents:
                    _clean(content.model_dump_json())

    anyio.run(go)


def test_the_cli_read_and_search_serve_none_of_them(vault: tuple[Path, Any]) -> None:
    root, hostile = vault
    runner = CliRunner()
    for rel in hostile.requests:
        result = runner.invoke(main, ["read", str(root), rel])
        assert result.exit_code == 1, rel
        _clean(result.output)
    for query in _queries(hostile):
        args = ["search", str(root), query, "--reconstruct", "--json", "--provider", "hashing"]
        result = runner.invoke(main, args)
        assert result.exit_code == 0, result.output
        _clean(_answer(json.loads(result.stdout)) + result.stderr)
    assert runner.invoke(main, ["read", str(root), hostile.alias]).output.startswith("---")


def _fifo_swap(root: Path, rel: str) -> None:
    (root / rel).unlink()
    os.mkfifo(root / rel)  # nobody ever writes: a blocking open would wait forever


def test_a_fifo_swapped_into_a_served_pack_never_blocks_a_reconstruct_search(
    ctx: Any, vault: tuple[Path, Any]
) -> None:
    root, _ = vault
    _fifo_swap(root, "docs/ports.md")
    tools = ToolContext(library=ctx.library)
    args = {"pack": "vault", "query": "admin port 8080", "reconstruct": True}
    out: dict[str, Any] = {}
    worker = threading.Thread(
        target=lambda: out.update(call_tool(tools, "ep_search", args)), daemon=True
    )
    worker.start()
    worker.join(timeout=60)  # bounded: a regression fails here instead of hanging the run
    assert not worker.is_alive(), "a reconstruct search blocked on a FIFO"
    hits = [h for h in out["results"] if h["source_file"] == "docs/ports.md"]
    assert hits and all(h["stale"] for h in hits)
    assert "not a regular file" in hits[0]["stale_note"]


def test_other_searches_keep_answering_while_a_fifo_is_served(
    ctx: Any, vault: tuple[Path, Any]
) -> None:
    root, _ = vault
    _fifo_swap(root, "docs/ports.md")
    server = build_server(ctx)
    many = 60  # more than the worker-thread pool: blocked reads would exhaust it

    async def go() -> None:
        async with Client(server) as c:
            with anyio.fail_after(120):
                async with anyio.create_task_group() as tg:
                    for _ in range(many):
                        args = {"pack": "vault", "query": "admin port", "reconstruct": True}
                        tg.start_soon(c.call_tool, "ep_search", args)
                r = await c.call_tool("ep_search", {"pack": "vault", "query": "routers"})
                assert not r.is_error
                assert r.structured_content["results"][0]["source_file"] in ("good.md", "alias.md")

    anyio.run(go)
