"""The MCP server: the registry's tools, pack resources, prompts and the skills extension.

Built on the SDK's low-level `Server` so the registry's JSON schemas drive `tools/list` as
they are (input is validated by `registry.call_tool`). One server serves exactly one `Access`:
the packs (and the skills hub or not) that its callers may see — every pack on stdio; on HTTP
one server per access the keys can grant, chosen per request by the auth decision. A server
never sees a pack outside its access, so its instructions, tools, resources and prompts
describe only what the caller may see.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import importlib.resources
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import mcp_types as types
import pydantic_core
from mcp.shared.exceptions import MCPError

from ep_mcp.errors import EpMcpError
from ep_mcp.library.runtime import PackRuntime
from ep_mcp.serve.auth import Access
from ep_mcp.serve.context import (
    Ctx,
    McpServer,
    PackScope,
    ServeContext,
    full_access,
    run_sync,
    until_ready,
    version,
)
from ep_mcp.serve.mcp import guide, resources
from ep_mcp.serve.mcp.skill_extension import install_skills
from ep_mcp.serve.subscriptions import SubscribableServer, install_subscriptions
from ep_mcp.tools.registry import ToolContext, ToolSpec, call_tool, tools

if TYPE_CHECKING:
    pass

logger = logging.getLogger(__name__)
SERVER_NAME = "ep-mcp"


@functools.cache
def icon() -> types.Icon:
    """ep-mcp's icon (a page under a magnifier) as a `data:` URI: a host shows it with no
    request to anywhere."""
    svg = importlib.resources.files("ep_mcp").joinpath("data/icon.svg").read_bytes()
    src = "data:image/svg+xml;base64," + base64.b64encode(svg).decode("ascii")
    return types.Icon(src=src, mime_type="image/svg+xml", sizes=["any"])


def tool_specs(view: PackScope) -> list[ToolSpec]:
    specs = tools("pack") if view.access.packs else []
    if view.hub is not None:
        specs += tools("skills")
    return specs


def _tool(spec: ToolSpec) -> types.Tool:
    return types.Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema=dict(spec.input_schema),
        output_schema=dict(spec.output_schema) if spec.output_schema else None,
        icons=[icon()],
        annotations=types.ToolAnnotations(
            title=spec.title,
            read_only_hint=True,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=spec.open_world,
        ),
    )


MAX_LINKS = 20  # resource links per tool result
MAX_COMPLETIONS = 100  # the protocol's limit per completion/complete answer


def resource_links(name: str, data: dict[str, Any]) -> list[types.ResourceLink]:
    """`ep://{slug}/file/…` links to the files an `ep_search` or `ep_read` answer cites, once
    each, in the answer's order: a client can open the raw file without another tool call."""
    if name == "ep_search":
        cited = [
            (h.get("pack") or data.get("pack"), h, h.get("source_file"))
            for h in data.get("results", ())
        ]
    elif name == "ep_read":
        cited = [(data.get("pack"), data, data.get("path"))]
    else:
        return []
    links: dict[str, types.ResourceLink] = {}
    for slug, item, path in cited:
        if not isinstance(slug, str) or not isinstance(path, str):
            continue
        uri = resources.file_uri(slug, path)
        title = item.get("title")
        links.setdefault(
            uri,
            types.ResourceLink(
                uri=uri,
                name=f"{slug}/{path}",
                title=title if isinstance(title, str) and title else None,
                mime_type=resources.MARKDOWN,
            ),
        )
    return list(links.values())[:MAX_LINKS]


def error_result(message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], is_error=True
    )


def run_tool(view: PackScope, name: str, arguments: dict[str, object]) -> types.CallToolResult:
    """Call a registry tool; every failure becomes an `isError` result, never an exception."""
    started = time.perf_counter()
    names = [s.name for s in tool_specs(view)]
    if name not in names:
        return error_result(
            f"unknown tool {name[:100]!r} — available: {', '.join(names) or 'none'}"
        )
    tool_ctx = ToolContext(library=view.library(), hub=view.hub)
    try:
        data = call_tool(tool_ctx, name, arguments)
    except EpMcpError as exc:
        return error_result(str(exc))
    except Exception:  # the outermost boundary: the server never dies on a tool
        logger.exception("tool %s failed", name)
        return error_result(
            f"{name} failed with an internal error — see the server log; "
            "try again or simplify the request"
        )
    if name == "ep_search" and view.serve.query_log is not None:
        view.serve.query_log.write("mcp", data, arguments, time.perf_counter() - started)
    # The text block repeats the structured content for clients that only read text (the
    # spec's SHOULD); serialised once, compactly, in Rust rather than with `json.dumps`.
    text = pydantic_core.to_json(data, fallback=str).decode("utf-8")
    content: list[types.ContentBlock] = [types.TextContent(type="text", text=text)]
    return types.CallToolResult(
        content=[*content, *resource_links(name, data)], structured_content=data
    )


def _cache_scope(view: PackScope, slugs: Sequence[str]) -> str:
    return "private" if any(s in view.serve.keyed for s in slugs) else "public"


def _not_found(message: str, uri: str) -> MCPError:
    return MCPError(code=types.INVALID_PARAMS, message=message, data={"uri": uri[:500]})


def build_server(
    serve: ServeContext, access: Access | None = None, *, sessions: bool = False
) -> McpServer:
    """One MCP server over ``access`` (None: every pack and the hub, as on stdio).
    ``sessions``: the transport keeps a back-channel per client (stdio), so the 2025 era's
    `resources/subscribe` can be served (`serve/subscriptions.py`)."""
    view = PackScope(serve, access if access is not None else full_access(serve))
    pack_tools = {spec.name for spec in tools("pack")}
    packs = [serve.library.runtimes[s].pack for s in view.all_slugs()]
    multi = len(packs) > 1

    async def list_tools(
        ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[_tool(s) for s in tool_specs(view)])

    async def call(ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        if params.name in pack_tools:  # the view is taken after the wait: never a stale one

            async def tell(waited: float, message: str) -> None:
                with contextlib.suppress(Exception):  # no token or no back-channel: nothing
                    await ctx.session.report_progress(waited, None, message)

            try:
                await until_ready(view.library(), f"call {params.name}", tell)
            except EpMcpError as exc:
                return error_result(str(exc))
        return await run_sync(serve, run_tool, view, params.name, arguments)

    async def list_resources(
        ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        items = [r for rt in view.runtimes() for r in resources.static_resources(rt.pack)]
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=r.uri,
                    name=r.name,
                    description=r.description,
                    mime_type=r.mime_type,
                    size=r.size,
                )
                for r in items
            ]
        )

    async def list_templates(
        ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        items = [t for rt in view.runtimes() for t in resources.templates(rt.pack)]
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=t.uri_template,
                    name=t.name,
                    description=t.description,
                    mime_type=t.mime_type,
                )
                for t in items
            ]
        )

    def read_text(uri: str) -> tuple[str, str, str]:
        """(slug, mime type, text) of a resource this server serves, else the MCP error."""
        try:
            scheme, slug, rest = resources.split_uri(uri)
            rt = view.runtime(slug)
            mime, text = resources.read(rt.pack, scheme, rest, rt.build_state)
        except EpMcpError as exc:
            raise _not_found(str(exc), uri) from None
        return slug, mime, text

    async def read_resource(
        ctx: Ctx, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        slug, mime, text = read_text(uri)
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=text)],
            ttl_ms=0,
            cache_scope=_cache_scope(view, [slug]),  # type: ignore[arg-type]
        )

    def prompt_table() -> dict[str, tuple[PackRuntime, guide.PromptDef]]:
        table = {}
        for rt in view.runtimes():
            for p in guide.pack_prompts(rt.pack):
                table[f"{rt.slug}/{p.name}" if multi else p.name] = (rt, p)
        return table

    async def list_prompts(
        ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        arg = types.PromptArgument(
            name="question", required=False, description="The user's situation or question."
        )
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(name=name, description=p.description, arguments=[arg])
                for name, (_, p) in sorted(prompt_table().items())
            ]
        )

    async def get_prompt(ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        table = prompt_table()
        if params.name not in table:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"unknown prompt {params.name[:100]!r} — available: "
                f"{', '.join(sorted(table)) or 'none'}",
            )
        rt, p = table[params.name]
        question = (params.arguments or {}).get("question")
        text = guide.render_prompt(rt.pack, p, question)
        return types.GetPromptResult(
            description=p.description,
            messages=[
                types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
            ],
        )

    async def completion(ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
        """Paths for the resource templates' `{+path}`; nothing else takes a finite set."""
        values: list[str] = []
        if isinstance(params.ref, types.ResourceTemplateReference) and (
            params.argument.name == "path"
        ):
            for rt in view.runtimes():
                paths = resources.template_paths(rt.pack, params.ref.uri)
                if paths is not None:
                    values = resources.complete(paths, params.argument.value)
                    break
        shown = values[:MAX_COMPLETIONS]
        return types.CompleteResult(
            completion=types.Completion(
                values=shown, total=len(values), has_more=len(values) > len(shown)
            )
        )

    server = SubscribableServer(
        SERVER_NAME,
        version=version(),
        title="ep-mcp" + (f" · {packs[0].name}" if len(packs) == 1 else ""),
        instructions=guide.instructions(packs) if packs else None,
        icons=[icon()],
        on_list_tools=list_tools,
        on_call_tool=call,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_completion=completion,
        get_tool_input_schema=lambda name: next(
            (dict(s.input_schema) for s in tool_specs(view) if s.name == name), None
        ),
    )
    install_skills(server, view)
    if serve.changes.watched:
        feed = serve.changes.feed(frozenset(view.all_slugs()))
        install_subscriptions(server, feed, read_text, sessions=sessions)
    return server
