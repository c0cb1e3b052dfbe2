"""The protocol's newer surface through the official client: completions, resource links in
tool results, and tool annotations."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from ep_mcp.serve.auth import Access
from ep_mcp.serve.mcp.server import build_server

MODES = ["auto", "legacy"]


def links(result: types.CallToolResult) -> list[types.ResourceLink]:
    return [c for c in result.content if isinstance(c, types.ResourceLink)]


@pytest.mark.parametrize("mode", MODES)
def test_search_and_read_results_link_the_files_they_cite(open_ctx: Any, mode: str) -> None:
    async def go() -> None:
        async with Client(build_server(open_ctx), mode=mode) as c:
            r = await c.call_tool("ep_search", {"query": "admin port", "pack": "alpha"})
            cited = [h["source_file"] for h in r.structured_content["results"]]
            got = links(r)
            assert [str(x.uri) for x in got] == [
                f"ep://alpha/file/{p}" for p in dict.fromkeys(cited)
            ]
            assert all(x.mime_type == "text/markdown" for x in got)
            assert got[0].title  # the file's title
            # a link opens with resources/read, as the client would follow it
            text = (await c.read_resource(str(got[0].uri))).contents[0].text  # type: ignore[union-attr]
            assert text.startswith("---")
            r = await c.call_tool("ep_read", {"path": "concepts/routing.md", "pack": "alpha"})
            assert [str(x.uri) for x in links(r)] == ["ep://alpha/file/concepts/routing.md"]
            r = await c.call_tool("ep_list_topics", {"pack": "alpha"})
            assert links(r) == []

    anyio.run(go)


def test_merged_search_links_each_hit_to_its_own_pack(open_ctx: Any) -> None:
    async def go() -> None:
        async with Client(build_server(open_ctx)) as c:
            r = await c.call_tool("ep_search", {"query": "tomatoes routing table"})
            packs = {h["pack"] for h in r.structured_content["results"]}
            assert packs == {"alpha", "beta"}
            assert {str(x.uri).split("/")[2] for x in links(r)} == packs

    anyio.run(go)


def test_file_paths_complete_for_the_resource_templates(open_ctx: Any) -> None:
    ep = types.ResourceTemplateReference(type="ref/resource", uri="ep://alpha/file/{+path}")

    async def go() -> None:
        async with Client(build_server(open_ctx)) as c:
            assert c.server_capabilities.completions is not None
            got = (await c.complete(ep, {"name": "path", "value": "concepts/"})).completion
            assert got.values == ["concepts/ports.md", "concepts/routing.md"]
            assert got.total == 2 and not got.has_more
            got = (await c.complete(ep, {"name": "path", "value": "ROUT"})).completion
            assert got.values == ["concepts/routing.md"]  # case-insensitive, anywhere
            everything = (await c.complete(ep, {"name": "path", "value": ""})).completion
            assert "overview.md" in everything.values and "_index.md" in everything.values
            skill = types.ResourceTemplateReference(
                type="ref/resource", uri="skill://alpha/{+path}"
            )
            got = (await c.complete(skill, {"name": "path", "value": "concepts/p"})).completion
            assert got.values == ["concepts/ports.md"]
            other = types.ResourceTemplateReference(
                type="ref/resource", uri="ep://zzz/file/{+path}"
            )
            assert (await c.complete(other, {"name": "path", "value": ""})).completion.values == []
            prompt = types.PromptReference(type="ref/prompt", name="alpha/diagnose")
            got = (await c.complete(prompt, {"name": "question", "value": "li"})).completion
            assert got.values == []

    anyio.run(go)


def test_completion_never_names_a_pack_the_caller_cannot_see(open_ctx: Any) -> None:
    only_beta = build_server(open_ctx, Access(frozenset({"beta"}), False))
    ref = types.ResourceTemplateReference(type="ref/resource", uri="ep://alpha/file/{+path}")

    async def go() -> None:
        async with Client(only_beta) as c:
            assert (await c.complete(ref, {"name": "path", "value": ""})).completion.values == []

    anyio.run(go)


def test_completions_stop_at_the_protocols_hundred(tmp_path: Path) -> None:
    from ep_mcp.config.load import load_settings
    from ep_mcp.serve.app import open_context

    pack = tmp_path / "many"
    pack.mkdir()
    for i in range(150):
        (pack / f"note-{i:03}.md").write_text(f"# Note {i}\n\nText {i}.\n")
    settings = load_settings(
        data={"packs": [str(pack)], "embedding": {"provider": "none"}, "server": {"watch": False}}
    )
    serve, _ = open_context(dataclasses.replace(settings, home=tmp_path / "home"))
    ref = types.ResourceTemplateReference(type="ref/resource", uri="ep://many/file/{+path}")

    async def go() -> None:
        async with Client(build_server(serve)) as c:
            got = (await c.complete(ref, {"name": "path", "value": "note-"})).completion
            assert got.values == [f"note-{i:03}.md" for i in range(100)]
            assert got.total == 150 and got.has_more
            got = (await c.complete(ref, {"name": "path", "value": "9.md"})).completion
            assert got.values[0] == "note-009.md" and got.total == 15 and not got.has_more

    try:
        anyio.run(go)
    finally:
        serve.library.close()


def test_every_tool_is_annotated_read_only_and_only_discovery_reaches_out(open_ctx: Any) -> None:
    async def go() -> None:
        async with Client(build_server(open_ctx)) as c:
            for tool in (await c.list_tools()).tools:
                a = tool.annotations
                assert a is not None and tool.title and a.title == tool.title
                assert a.read_only_hint and a.idempotent_hint and a.destructive_hint is False
                assert a.open_world_hint is False

    anyio.run(go)
    from ep_mcp.tools.registry import get_tool

    assert get_tool("skill_discover_github").open_world
    assert not get_tool("skill_search").open_world


@pytest.mark.parametrize("mode", MODES)
def test_every_tool_and_the_server_carry_an_icon_and_tools_an_output_schema(
    open_ctx: Any, mode: str
) -> None:
    import base64
    import xml.etree.ElementTree as ET

    async def go() -> None:
        async with Client(build_server(open_ctx), mode=mode) as c:
            listed = (await c.list_tools()).tools
            assert listed
            info = c.server_info
            assert info is not None and info.icons
            for icons in [info.icons, *(t.icons for t in listed)]:
                assert icons is not None and len(icons) == 1
                (only,) = icons
                assert only.mime_type == "image/svg+xml"
                head, _, data = only.src.partition(",")
                assert head == "data:image/svg+xml;base64"  # no request to anywhere
                assert ET.fromstring(base64.b64decode(data)).tag.endswith("svg")
            assert all(t.output_schema and t.output_schema["type"] == "object" for t in listed)

    anyio.run(go)
