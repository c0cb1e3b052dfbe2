"""The HTTP service (Starlette): MCP over Streamable HTTP, `/search`, `/health`, `/packs`,
`/openapi.json` and the workbench pages (serve/web/).

`/mcp` serves every pack the caller may see, `/packs/{slug}/mcp` one pack. Middleware screens
every request (serve/http/middleware.py); each MCP endpoint then decides, from the route the router
matched and the Bearer key or access token (serve/oauth_http.py), what the caller may see, and
hands the request to the MCP server built for exactly that access — or refuses it. A request
that was not decided reaches no server. Every error is `{"error": {"code", "message"}}`;
nothing a client sends produces a 500.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send

from ep_mcp.config.model import ServerSettings
from ep_mcp.index.buildstate import overall
from ep_mcp.serve import auth
from ep_mcp.serve.context import ServeContext, version
from ep_mcp.serve.http.middleware import (
    BodyLimitMiddleware,
    ErrorBoundaryMiddleware,
    NoStoreMiddleware,
    RateLimitMiddleware,
    ScreenMiddleware,
    error_response,
    read_body,
    replay,
)
from ep_mcp.serve.http.openapi import openapi_document
from ep_mcp.serve.http.ratelimit import RateLimiter
from ep_mcp.serve.http.search_api import search_endpoint
from ep_mcp.serve.mcp.fast import answer_tool_call
from ep_mcp.serve.mcp.server import build_server
from ep_mcp.serve.oauth_http import Gate, metadata_routes
from ep_mcp.serve.web import SecurityHeadersMiddleware, web_routes

logger = logging.getLogger(__name__)

RouteKey = tuple[str | None, auth.Access]  # (the pack of /packs/{slug}/mcp or None, access)
_VALID_ID = (str, int)
MAX_TOKEN_SERVERS = 256  # MCP servers built on first use for distinct token scopes on /mcp
MAX_LISTENS_PER_CALLER = 8  # open subscriptions/listen streams of one key, token or address


def _bad_ids(body: bytes) -> bool:
    """True when a JSON-RPC message carries an id that is neither a string nor an integer
    (the SDK would take it for a notification and answer an empty 202)."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return False  # not JSON: the SDK answers with a parse error
    messages = data if isinstance(data, list) else [data]
    return any(
        isinstance(m, dict)
        and "id" in m
        and (isinstance(m["id"], bool) or not isinstance(m["id"], _VALID_ID))
        for m in messages
    )


def _listens(body: bytes) -> bool:
    """True for a `subscriptions/listen` request: its response is a stream that lasts until
    the client disconnects, so the SDK must hear the real disconnect."""
    if b"subscriptions/listen" not in body:
        return False
    with contextlib.suppress(ValueError, RecursionError):
        data = json.loads(body)
        return isinstance(data, dict) and data.get("method") == "subscriptions/listen"
    return False


def _json_content(scope: Scope) -> bool:
    """The SDK's Content-Type rule for a POST to an MCP endpoint: one starting
    `application/json` (any case, parameters allowed)."""
    values = [v for k, v in scope.get("headers", []) if k.lower() == b"content-type"]
    return len(values) == 1 and values[0].lower().startswith(b"application/json")


def _rpc_error(status: int, code: int, message: str) -> Response:
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    return JSONResponse(body, status_code=status)


class Managers:
    """The MCP servers: those built ahead for every access API keys can grant, and those a
    token's scopes on `/mcp` need, built on first use (at most ``MAX_TOKEN_SERVERS``) and run
    in the app's task group until it stops."""

    def __init__(
        self,
        serve: ServeContext,
        ahead: Mapping[RouteKey, StreamableHTTPSessionManager],
        max_body: int,
    ) -> None:
        self.serve = serve
        self.ahead = ahead
        self.max_body = max_body
        self.built: dict[RouteKey, StreamableHTTPSessionManager] = {}
        self._group: TaskGroup | None = None
        self._lock = anyio.Lock()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                yield
            finally:
                self._group = None
                group.cancel_scope.cancel()

    @staticmethod
    async def _serve(
        manager: StreamableHTTPSessionManager, *, task_status: TaskStatus[None]
    ) -> None:
        async with manager.run():
            task_status.started()
            await anyio.sleep_forever()

    async def get(self, key: RouteKey, token: bool) -> StreamableHTTPSessionManager | None:
        found = self.ahead.get(key) or self.built.get(key)
        if found is not None or not token or key[0] is not None:
            return found
        async with self._lock:
            if key in self.built:
                return self.built[key]
            if self._group is None or len(self.built) >= MAX_TOKEN_SERVERS:
                logger.warning("no MCP server for a token's access: %d in use", len(self.built))
                return None
            manager = _manager(self.serve, key[1], self.max_body)
            await self._group.start(self._serve, manager)
            self.built[key] = manager
            return manager


class McpEndpoint:
    """`/mcp` and `/packs/{slug}/mcp`: decide the caller's access from the matched route and
    the key or token, then hand the request to the server built for that access."""

    def __init__(self, serve: ServeContext, gate: Gate, managers: Managers, max_body: int) -> None:
        self.serve = serve
        self.gate = gate
        self.ring = gate.ring
        self.managers = managers
        self.max_body = max_body
        self.listening: dict[str, int] = {}  # caller -> its open listen streams (one loop)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "POST":
            response = error_response(
                405,
                "this MCP endpoint is stateless: send JSON-RPC with POST (no GET event stream, "
                "no DELETE of sessions)",
                {"Allow": "POST"},
            )
            await response(scope, receive, send)
            return
        slug = scope.get("path_params", {}).get("slug")
        served = self.serve.library.slugs()
        route = "/mcp" if slug is None else f"/packs/{slug}/mcp"
        # an unknown slug's route is weighed like a real one's (no existence oracle)
        credential = await self.gate.credential(scope, route)
        decision = auth.decide(self.ring, served, slug, credential, hub=self.serve.hub is not None)
        if decision.status != 200:
            if decision.status == 404:
                message = f"pack '{str(slug)[:100]}' not found — list the packs at /packs"
            else:
                message = decision.message
            headers = self.gate.challenge(decision, route)
            await error_response(decision.status, message, headers)(scope, receive, send)
            return
        token = isinstance(credential, auth.TokenGrant)
        manager = await self.managers.get((slug, decision.access), token)
        if manager is None and token and slug is None:  # the servers built for tokens: full
            await error_response(
                503,
                f"this server already runs {MAX_TOKEN_SERVERS} MCP servers for distinct token "
                "scopes on /mcp — use a pack's own endpoint (/packs/{slug}/mcp) or restart it",
            )(scope, receive, send)
            return
        if manager is None:  # fail closed: an access nobody built a server for sees nothing
            logger.error("no MCP server for %s on %r", decision.access, scope["path"][:200])
            await error_response(403, "this key opens nothing on this endpoint")(
                scope, receive, send
            )
            return
        if not _json_content(scope):  # the SDK's own refusal is a bare text/plain 400
            await error_response(
                400, "an MCP request is JSON-RPC — send it with `Content-Type: application/json`"
            )(scope, receive, send)
            return
        body = await read_body(receive, self.max_body)
        if body is None:
            await error_response(413, f"request body over {self.max_body} bytes — send less")(
                scope, receive, send
            )
            return
        if _bad_ids(body):
            await _rpc_error(
                400, -32600, "invalid request: a JSON-RPC id must be a string or an integer"
            )(scope, receive, send)
            return
        if await answer_tool_call(manager, scope, body, send):  # a plain stateless tools/call
            return
        if not _listens(body):
            await manager.handle_request(scope, replay(body), send)
            return
        caller = _caller(scope, credential)
        if self.listening.get(caller, 0) >= MAX_LISTENS_PER_CALLER:
            await error_response(
                429,
                f"this caller already holds {MAX_LISTENS_PER_CALLER} open subscriptions/listen "
                "streams — close one (or listen to more URIs on one stream) first",
            )(scope, receive, send)
            return
        self.listening[caller] = self.listening.get(caller, 0) + 1
        try:
            until = credential.until if isinstance(credential, auth.TokenGrant) else None
            if until is None:
                await manager.handle_request(scope, replay(body, then=receive), send)
            else:  # a listen stream lasts as long as the token that opened it is accepted
                await _until(until, manager, scope, replay(body, then=receive), send)
        finally:
            left = self.listening.pop(caller) - 1
            if left:
                self.listening[caller] = left


def _caller(scope: Scope, credential: auth.Presented) -> str:
    """Who holds a listen stream: the key or token presented (its digest), or the client's
    address when it presented none."""
    if isinstance(credential, auth.TokenGrant | bytes):
        presented = auth.bearer_token(scope.get("headers", []))
        if isinstance(presented, bytes):
            return "bearer:" + hashlib.sha256(presented).hexdigest()
    client = scope.get("client")
    return "address:" + (str(client[0]) if client else "")


async def _until(
    until: float, manager: StreamableHTTPSessionManager, scope: Scope, receive: Receive, send: Send
) -> None:
    """Serve a listen stream until the wall-clock second ``until`` (its token's end), then
    end its response: the body closed if it had begun, else a 401."""
    state = {"started": False, "ended": False}

    async def tracked(message: Message) -> None:
        if message["type"] == "http.response.start":
            state["started"] = True
        elif message["type"] == "http.response.body" and not message.get("more_body", False):
            state["ended"] = True
        await send(message)

    with anyio.move_on_after(max(0.0, until - time.time())) as expiry:
        await manager.handle_request(scope, receive, tracked)
    if not expiry.cancelled_caught or state["ended"]:
        return
    logger.info("a subscriptions/listen stream ended: its access token expired")
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        if state["started"]:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        else:
            await error_response(401, "the access token expired — get a new one")(
                scope, receive, send
            )


def _auth_kind(ring: auth.KeyRing, slug: str) -> str:
    if slug in ring.keyed:
        return "api_key"
    return "oauth" if ring.oauth else "none"


def _manager(
    serve: ServeContext, access: auth.Access, max_body: int
) -> StreamableHTTPSessionManager:
    return StreamableHTTPSessionManager(
        app=build_server(serve, access),
        json_response=True,
        stateless=True,
        security_settings=None,  # ScreenMiddleware checks Host and Origin on every route
        max_request_body_size=max_body,
    )


def build_managers(
    serve: ServeContext, ring: auth.KeyRing, max_body: int
) -> dict[RouteKey, StreamableHTTPSessionManager]:
    """One MCP server per route and per access a caller can hold there, built ahead."""
    served = serve.library.slugs()
    hub = serve.hub is not None
    keys: set[RouteKey] = {(None, a) for a in ring.possible_access(served, hub)}
    for slug in served:
        keys |= {(slug, auth.Access(frozenset({slug}), h)) for h in {False, hub}}
    return {key: _manager(serve, key[1], max_body) for key in keys}


def create_app(
    serve: ServeContext,
    server: ServerSettings,
    ring: auth.KeyRing,
    *,
    background: Callable[[], contextlib.AbstractAsyncContextManager[Any]] | None = None,
) -> Starlette:
    """The whole HTTP service. ``background`` (e.g. the file watcher) runs with the app."""
    if server.auth.enabled:  # every pack needs a token (or its key): none is open
        ring = dataclasses.replace(ring, oauth=True)
    gate = Gate(ring, server.auth)
    managers = build_managers(serve, ring, server.max_body_bytes)
    pool = Managers(serve, managers, server.max_body_bytes)
    mcp = McpEndpoint(serve, gate, pool, server.max_body_bytes)

    async def health(request: Request) -> Response:
        index = overall([rt.build_state() for rt in serve.library])
        body = {"status": "ok", "packs": len(serve.library.slugs()), "index": index}
        failed = serve.library.readiness.error
        if failed is not None:  # the start-up build failed: the packs cannot be searched
            return JSONResponse({**body, "status": "error", "error": str(failed)}, 503)
        reasons = [p for rt in serve.library for p in rt.problems()]
        if serve.query_log is not None and serve.query_log.problem:
            reasons.append(serve.query_log.problem)
        if reasons:  # still answering, less well: a full disk, vectors awaiting repair
            return JSONResponse({**body, "status": "degraded", "reasons": reasons})
        return JSONResponse(body)

    async def packs(request: Request) -> Response:
        """The packs this caller may see (keyed packs only with their key)."""
        served = serve.library.slugs()
        visible = ring.access(await gate.credential(request.scope), served, False).packs
        out = []
        for rt in serve.library:
            if rt.slug not in visible:
                continue
            p = rt.pack
            out.append(
                {
                    "slug": p.slug,
                    "name": p.name,
                    "kind": p.kind,
                    "files": len(p.documents),
                    "auth": _auth_kind(ring, p.slug),
                    "mcp": f"/packs/{p.slug}/mcp",
                    "artifact_version": rt.version,  # None: built in place
                    "index": rt.build_state(),
                }
            )
        return JSONResponse({"packs": out})

    async def search(request: Request) -> Response:
        return await search_endpoint(request, serve, gate, error_response)

    async def openapi(request: Request) -> Response:

        return JSONResponse(openapi_document(version()))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            for manager in managers.values():
                await stack.enter_async_context(manager.run())
            await stack.enter_async_context(pool.running())
            if background is not None:
                await stack.enter_async_context(background())
            yield

    async def http_error(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
        if status == 404:
            detail = (
                "no such route — try / (the workbench), /search, /packs, /health, "
                "/openapi.json, /mcp or /packs/{slug}/mcp"
            )
        return error_response(status, str(detail))

    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        HTTPException: http_error,
    }
    middleware = [
        Middleware(SecurityHeadersMiddleware),
        Middleware(NoStoreMiddleware),
        Middleware(ErrorBoundaryMiddleware),
    ]
    if server.forwarded_allow_ips:
        from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

        middleware.append(
            Middleware(ProxyHeadersMiddleware, trusted_hosts=list(server.forwarded_allow_ips))
        )
    if server.rate_limit_per_minute:
        middleware.append(
            Middleware(RateLimitMiddleware, limiter=RateLimiter(server.rate_limit_per_minute))
        )
    middleware += [
        Middleware(
            ScreenMiddleware,
            allowed_hosts=auth.default_allowed_hosts(server.host, server.mcp_allowed_hosts),
            allowed_origins=auth.default_allowed_origins(server.mcp_allowed_origins),
        ),
        Middleware(
            BodyLimitMiddleware, max_bytes=server.max_body_bytes, timeout_s=server.body_timeout_s
        ),
    ]
    return Starlette(
        routes=[
            Route("/health", health, methods=["GET"]),
            Route("/packs", packs, methods=["GET"]),
            Route("/search", search, methods=["GET", "POST"]),
            Route("/mcp", mcp),
            Route("/packs/{slug}/mcp", mcp),
            Route("/openapi.json", openapi, methods=["GET"]),
            *metadata_routes(gate, serve.hub is not None),
            *web_routes(serve, ring),
        ],
        middleware=middleware,
        exception_handlers=handlers,
        lifespan=lifespan,
    )
