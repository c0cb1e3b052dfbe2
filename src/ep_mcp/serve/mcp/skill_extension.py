"""The `io.modelcontextprotocol/skills` extension (SEP-2640): `skills/list` and `skills/get`.

Registered on the low-level server with `add_request_handler` and advertised through
`Server.extensions` (the capability rides `server/discover`; legacy `initialize` drops it, as
the SDK documents). What it lists are the snapshots of `skill_publish.py`.
"""

from __future__ import annotations

from typing import Any, Literal

import mcp_types as types
from mcp.shared.exceptions import MCPError

from ep_mcp.serve.context import Ctx, McpServer, PackScope
from ep_mcp.serve.mcp.skill_publish import SkillSnapshot, snapshot_of

EXTENSION_ID = "io.modelcontextprotocol/skills"
TTL_MS = 60_000  # packs can be live-reloaded: a minute of freshness, then re-fetch


class ListSkillsParams(types.PaginatedRequestParams):
    pass


class GetSkillParams(types.RequestParams):
    uri: str


class ListSkillsResult(types.PaginatedResult, types.CacheableResult):
    skills: list[dict[str, Any]]


class GetSkillResult(types.CacheableResult):
    skill: dict[str, Any]


def _snapshots(view: PackScope) -> list[SkillSnapshot]:
    snaps = [snapshot_of(rt.pack) for rt in view.runtimes()]
    return sorted((s for s in snaps if s is not None), key=lambda s: s.skill_uri)


def _scope(view: PackScope, snaps: list[SkillSnapshot]) -> Literal["private", "public"]:
    return "private" if any(s.slug in view.serve.keyed for s in snaps) else "public"


def install_skills(server: McpServer, view: PackScope) -> bool:
    """Declare the extension and its two methods when any pack of the view is a skill."""
    lib = view.serve.library
    if not any(snapshot_of(lib.runtimes[s].pack) for s in view.all_slugs()):
        return False

    async def list_skills(ctx: Ctx, params: ListSkillsParams) -> ListSkillsResult:
        if params.cursor is not None:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message="invalid cursor — skills/list returns a single page",
            )
        snaps = _snapshots(view)
        return ListSkillsResult(
            skills=[s.entry() for s in snaps], ttl_ms=TTL_MS, cache_scope=_scope(view, snaps)
        )

    async def get_skill(ctx: Ctx, params: GetSkillParams) -> GetSkillResult:
        for snap in _snapshots(view):
            if snap.skill_uri == params.uri:
                return GetSkillResult(
                    skill=snap.entry(), ttl_ms=TTL_MS, cache_scope=_scope(view, [snap])
                )
        raise MCPError(
            code=types.INVALID_PARAMS,
            message=f"{params.uri[:300]!r} is not a skill served here — list them with skills/list",
            data={"uri": params.uri[:500]},
        )

    server.add_request_handler("skills/list", ListSkillsParams, list_skills)
    server.add_request_handler("skills/get", GetSkillParams, get_skill)
    server.extensions[EXTENSION_ID] = {}
    return True
