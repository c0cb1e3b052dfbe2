"""Paths cannot leave the pack: 100+ traversal variants on ep_read and each resource template."""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError

from ep_mcp.serve.mcp.server import build_server

SECRET = "TOP-SECRET-CANARY-7f3a"

BASE = [
    "../secret.md",
    "../../secret.md",
    "concepts/../../secret.md",
    "/etc/passwd",
    "/etc/hostname",
    "%2e%2e%2fsecret.md",
    "%252e%252e%252fsecret.md",
    "..%5csecret.md",
    "..\\secret.md",
    "....//secret.md",
    ".%2e/secret.md",
    "overview.md%00.txt",
    "overview.md\x00",
    "C:\\x",
    "C:x",
    "\\\\srv\\s",
    "~/.ssh/id_rsa",
    "\u2025/secret.md",
    "\uff0e\uff0e\uff0fsecret.md",
    "%c0%ae%c0%ae/secret.md",
    "overview.md?x=../..",
    "overview.md#..",
    "",
    ".",
    "//",
    "x" * 10_000,
    "/".join(["a"] * 1000),
    "../alpha-private/s.md",
    "../alpha-private",
    "escape.md",
    "./../secret.md",
    "concepts/./../../secret.md",
    "%2Fetc%2Fpasswd",
    "file:///etc/passwd",
    "/proc/self/environ",
    "\\..\\secret.md",
    "concepts\\..\\..\\secret.md",
    "..;/secret.md",
    "%2e%2e/%2e%2e/secret.md",
    "..%2fsecret.md",
    "%2e%2e%5csecret.md",
    "..%c0%afsecret.md",
    "..%ef%bc%8fsecret.md",
    "con",
    "NUL",
    "aux.md",
    "..",
    "...",
    " ../secret.md",
    "../secret.md ",
]
PREFIXES = ["", "concepts/", "./"]
VARIANTS = list(dict.fromkeys(p + b for p in PREFIXES for b in BASE))


def test_there_are_at_least_100_variants() -> None:
    assert len(VARIANTS) >= 100


def _no_secret(text: str) -> None:
    assert SECRET not in text
    assert "root:" not in text  # /etc/passwd


def test_no_variant_escapes_through_ep_read_or_the_resource_templates(open_ctx: Any) -> None:
    server = build_server(open_ctx)
    pack_paths = {d.path for d in open_ctx.library.get("alpha").pack.documents}

    async def go() -> None:
        async with Client(server) as c:
            for variant in VARIANTS:
                for key in ("path", "id"):
                    r = await c.call_tool("ep_read", {"pack": "alpha", key: variant})
                    text = r.content[0].text if r.content else ""  # type: ignore[union-attr]
                    _no_secret(text)
                    if key == "id" and not r.is_error:  # an id may resolve to an in-pack file
                        assert r.structured_content["path"] in pack_paths
                        continue
                    assert r.is_error, (key, variant)
                    assert "/tmp" not in text  # no absolute server path in messages
                for uri in (f"ep://alpha/file/{variant}", f"skill://alpha/{variant}"):
                    try:
                        res = await c.read_resource(uri)
                    except MCPError as exc:
                        assert exc.error.code == types.INVALID_PARAMS
                        _no_secret(exc.error.message)
                    else:  # pragma: no cover - any success is a failure
                        raise AssertionError(f"{uri!r} was served: {res.contents[0]!r}")
            for node in ("../secret.md", "/etc/passwd", "escape.md"):
                r = await c.call_tool("ep_graph_traverse", {"pack": "alpha", "node_id": node})
                assert r.is_error

    anyio.run(go)
