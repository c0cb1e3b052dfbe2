"""The MCP server through the official SDK Client, in-process, in both protocol eras."""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from ep_mcp.serve.auth import Access
from ep_mcp.serve.mcp.server import build_server
from ep_mcp.serve.mcp.skill_extension import (
    EXTENSION_ID,
    GetSkillParams,
    GetSkillResult,
    ListSkillsParams,
    ListSkillsResult,
)

MODES = ["auto", "legacy"]


class ListSkills(types.Request[ListSkillsParams | None, str]):
    method: str = "skills/list"
    params: ListSkillsParams | None = None


class GetSkill(types.Request[GetSkillParams, str]):
    method: str = "skills/get"
    params: GetSkillParams


def run(fn: Any, *args: Any) -> Any:
    return anyio.run(fn, *args)


@pytest.mark.parametrize("mode", MODES)
def test_every_tool_answers_with_structured_content_in_both_eras(open_ctx: Any, mode: str) -> None:
    server = build_server(open_ctx)

    async def go() -> None:
        async with Client(server, mode=mode) as c:
            assert c.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
            listed = {t.name: t for t in (await c.list_tools()).tools}
            assert set(listed) == {"ep_search", "ep_read", "ep_list_topics", "ep_graph_traverse"}
            assert listed["ep_search"].input_schema["required"] == ["query"]
            assert listed["ep_search"].output_schema is not None
            calls = {
                "ep_search": {"query": "admin port", "pack": "alpha", "max_results": 3},
                "ep_read": {"path": "concepts/routing.md", "pack": "alpha"},
                "ep_list_topics": {"pack": "beta"},
                "ep_graph_traverse": {"file_path": "concepts/routing.md", "pack": "alpha"},
            }
            for name, args in calls.items():
                r = await c.call_tool(name, args)
                assert not r.is_error, (name, r.content)
                assert r.structured_content is not None
                assert json.loads(r.content[0].text) == r.structured_content  # type: ignore[union-attr]
            hits = (await c.call_tool("ep_search", calls["ep_search"])).structured_content
            assert hits["results"][0]["source_file"] in ("concepts/ports.md", "concepts/routing.md")

    run(go)


def test_unknown_or_missing_pack_is_an_error_naming_the_available_ones(open_ctx: Any) -> None:
    server = build_server(open_ctx)

    async def go() -> None:
        async with Client(server) as c:
            r = await c.call_tool("ep_search", {"query": "x", "pack": "nope"})
            assert r.is_error and "alpha, beta" in r.content[0].text  # type: ignore[union-attr]
            r = await c.call_tool("ep_list_topics", {})
            assert r.is_error and "name one with `pack`" in r.content[0].text  # type: ignore[union-attr]
            r = await c.call_tool("ep_search", {"query": "x", "max_results": 99, "pack": "beta"})
            assert r.is_error and "max_results" in r.content[0].text  # type: ignore[union-attr]
            r = await c.call_tool("ep_read", {"pack": "alpha"})
            assert r.is_error and "path" in r.content[0].text  # type: ignore[union-attr]

    run(go)


def test_one_pack_view_needs_no_pack_argument(open_ctx: Any) -> None:
    server = build_server(open_ctx, Access(frozenset({"beta"})))

    async def go() -> None:
        async with Client(server) as c:
            r = await c.call_tool("ep_search", {"query": "tomatoes"})
            assert not r.is_error
            assert r.structured_content["results"][0]["source_file"] == "gardening.md"
            assert "beta" in (c.instructions or "")

    run(go)


def test_read_section_with_neighbors_and_reconstruct(open_ctx: Any) -> None:
    server = build_server(open_ctx, Access(frozenset({"alpha"})))

    async def go() -> None:
        async with Client(server) as c:
            r = await c.call_tool(
                "ep_read",
                {
                    "id": "alpha/concepts/routing",
                    "section": "Routing > Setup",
                    "neighbors": True,
                    "reconstruct": True,
                },
            )
            data = r.structured_content
            assert data["section"] == ["Routing", "Setup"]
            assert "### Ports" in data["text"] and "Troubleshooting" not in data["text"]
            assert [n["heading_path"] for n in data["neighbors"]] == [
                ["Routing", "Troubleshooting"]
            ]
            assert data["fragment_id"].startswith("alpha/concepts/routing#setup:")
            assert data["requires_resolved"] == ["concepts/ports.md"]
            nav = await c.call_tool("ep_read", {"path": "_index.md"})
            assert not nav.is_error and nav.structured_content["navigation"] is True

    run(go)


@pytest.mark.parametrize("mode", MODES)
def test_every_resource_kind_reads_and_unknown_ones_are_invalid_params(
    open_ctx: Any, mode: str
) -> None:
    server = build_server(open_ctx)

    async def go() -> None:
        async with Client(server, mode=mode) as c:
            uris = {r.uri for r in (await c.list_resources()).resources}
            assert {"ep://alpha/manifest", "ep://beta/files", "skill://alpha/SKILL.md"} <= uris
            assert "skill://alpha/private/notes.md" not in uris  # on_demand is not a skill file
            templates = {
                t.uri_template for t in (await c.list_resource_templates()).resource_templates
            }
            assert {"ep://alpha/file/{+path}", "skill://alpha/{+path}"} <= templates
            for uri, needle in [
                ("ep://alpha/manifest", '"slug": "alpha"'),
                ("ep://alpha/authority", "Routers and ports"),
                ("ep://beta/authority", '"declared": false'),
                ("ep://alpha/files", "concepts/routing.md"),
                ("ep://alpha/file/concepts/routing.md", "requires: [concepts/ports.md]"),
                ("ep://alpha/file/private/notes.md", "quarterly"),
                ("skill://alpha/SKILL.md", 'name: "alpha"'),
                ("skill://alpha/concepts/ports.md", "admin port"),
            ]:
                res = await c.read_resource(uri)
                assert needle in res.contents[0].text, uri  # type: ignore[union-attr]
            for bad in [
                "ep://alpha/file/nope.md",
                "ep://nope/manifest",
                "skill://beta/SKILL.md",
                "skill://alpha/private/notes.md",
                "http://x/y",
            ]:
                with pytest.raises(MCPError) as err:
                    await c.read_resource(bad)
                assert err.value.error.code == types.INVALID_PARAMS

    run(go)


@pytest.mark.parametrize("mode", MODES)
def test_prompts_come_from_the_manifest_and_render_the_workflow(open_ctx: Any, mode: str) -> None:
    server = build_server(open_ctx)

    async def go() -> None:
        async with Client(server, mode=mode) as c:
            names = [p.name for p in (await c.list_prompts()).prompts]
            assert names == ["alpha/diagnose"]
            got = await c.get_prompt("alpha/diagnose", {"question": "no link light"})
            text = got.messages[0].content.text  # type: ignore[union-attr]
            assert "Search for the symptom" in text and "no link light" in text
            with pytest.raises(MCPError):
                await c.get_prompt("nope")

    run(go)


def test_skills_extension_lists_and_gets_with_digests_matching_served_bytes(open_ctx: Any) -> None:
    import hashlib

    server = build_server(open_ctx)

    async def go() -> None:
        async with Client(server) as c:
            assert EXTENSION_ID in (c.server_capabilities.extensions or {})
            listed = await c.session.send_request(
                ListSkills(params=ListSkillsParams()), ListSkillsResult
            )
            assert listed.cache_scope == "public" and listed.ttl_ms > 0
            (skill,) = listed.skills
            assert skill["uri"] == "skill://alpha/SKILL.md"
            assert skill["frontmatter"]["name"] == "alpha"
            uris = [r["uri"] for r in skill["resources"]]
            assert "skill://alpha/SKILL.md" in uris and len(uris) == len(set(uris))
            for entry in skill["resources"]:
                text = (await c.read_resource(entry["uri"])).contents[0].text  # type: ignore[union-attr]
                data = text.encode("utf-8")
                assert entry["size"] == len(data)
                assert entry["digest"] == "sha256:" + hashlib.sha256(data).hexdigest()
            got = await c.session.send_request(
                GetSkill(params=GetSkillParams(uri="skill://alpha/SKILL.md")), GetSkillResult
            )
            assert got.skill == skill
            with pytest.raises(MCPError) as err:
                await c.session.send_request(
                    GetSkill(params=GetSkillParams(uri="skill://alpha/overview.md")), GetSkillResult
                )
            assert err.value.error.code == types.INVALID_PARAMS

    run(go)


def test_generated_skill_frontmatter_round_trips_through_yaml(open_ctx: Any) -> None:
    import yaml

    from ep_mcp.serve.mcp.skill_publish import snapshot_of

    snap = snapshot_of(open_ctx.library.get("alpha").pack)
    assert snap is not None
    text = snap.files["skill://alpha/SKILL.md"].text
    head = text.split("---\n")[1]
    assert yaml.safe_load(head) == snap.frontmatter


def test_no_skill_pack_means_no_extension(open_ctx: Any) -> None:
    server = build_server(open_ctx, Access(frozenset({"beta"})))

    async def go() -> None:
        async with Client(server) as c:
            assert EXTENSION_ID not in (c.server_capabilities.extensions or {})
            with pytest.raises(MCPError) as err:
                await c.session.send_request(
                    ListSkills(params=ListSkillsParams()), ListSkillsResult
                )
            assert err.value.error.code == types.METHOD_NOT_FOUND

    run(go)
