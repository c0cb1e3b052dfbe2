"""The HTTP service (Starlette): MCP over Streamable HTTP, `/search`, `/health`, `/packs`.

`/mcp` serves every pack the caller may see, `/packs/{slug}/mcp` one pack. A pure-ASGI guard
in front of every route checks Host (421) and Origin (403), caps the body (413) and, on the
MCP routes, decides from the Bearer key which packs the request may see. Every error is
`{"error": {"code", "message"}}`; nothing a client sends produces a 500.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ep_mcp.config import ServerSettings
from ep_mcp.serve import auth
from ep_mcp.serve.mcp_server import PACKS_SCOPE_KEY, ServeContext, build_server
from ep_mcp.serve.ratelimit import RateLimiter
from ep_mcp.serve.search_api import search_endpoint

logger = logging.getLogger(__name__)

CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "payload_too_large",
    421: "misdirected_request",
    422: "unprocessable",
    429: "rate_limited",
    500: "internal_error",
    503: "unavailable",
}


def error_response(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    body = {"error": {"code": CODES.get(status, str(status)), "message": message}}
    return JSONResponse(body, status_code=status, headers=headers)


@dataclass(frozen=True)
class Guard:
    """Host/Origin allow-lists, the body cap and the key ring, shared by every route."""

    ring: auth.KeyRing
    allowed_hosts: tuple[str, ...]
    allowed_origins: tuple[str, ...]
    max_body_bytes: int
    limiter: RateLimiter | None = None


def make_guard(serve: ServeContext, server: ServerSettings, ring: auth.KeyRing) -> Guard:
    return Guard(
        ring=ring,
        allowed_hosts=auth.default_allowed_hosts(server.host, server.mcp_allowed_hosts),
        allowed_origins=auth.default_allowed_origins(server.mcp_allowed_origins),
        max_body_bytes=server.max_body_bytes,
        limiter=RateLimiter(server.rate_limit_per_minute) if server.rate_limit_per_minute else None,
    )


def _header(scope: Scope, name: bytes) -> str | None:
    for k, v in scope.get("headers", []):
        if k.lower() == name:
            return str(v.decode("latin-1"))
    return None


def _mcp_target(path: str) -> tuple[bool, str | None]:
    """(is an MCP route, the pack slug for /packs/{slug}/mcp)."""
    stripped = path.rstrip("/")
    if stripped == "/mcp":
        return True, None
    parts = stripped.split("/")
    if len(parts) == 4 and parts[1] == "packs" and parts[3] == "mcp" and parts[2]:
        return True, parts[2]
    return False, None


class GuardMiddleware:
    """Host, Origin, body size and MCP-route auth, in front of every route."""

    def __init__(self, app: ASGIApp, guard: Guard, serve: ServeContext) -> None:
        self.app = app
        self.guard = guard
        self.serve = serve

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._throttle(scope) or self._refuse(scope)
        if refusal is not None:
            await _drain_then(refusal, scope, receive, send)
            return
        if scope["method"] in ("POST", "PUT", "PATCH"):
            body = await _read_body(receive, self.guard.max_body_bytes)
            if body is None:
                msg = f"request body over {self.guard.max_body_bytes} bytes — send less"
                await error_response(413, msg)(scope, receive, send)
                return
            receive = _replay(body)
        try:
            await self.app(scope, receive, send)
        except Exception:  # the outermost boundary: log it, answer with the envelope
            logger.exception("unhandled error on %s %s", scope["method"], scope["path"])
            with contextlib.suppress(Exception):
                await error_response(500, "internal error — see the server log")(
                    scope, receive, send
                )

    def _throttle(self, scope: Scope) -> Response | None:
        limiter = self.guard.limiter
        if limiter is None or scope["path"] == "/health":
            return None
        client = scope.get("client")
        wait = limiter.wait_for(str(client[0]) if client else "unknown")
        if wait <= 0:
            return None
        after = limiter.retry_after(wait)
        return error_response(
            429, f"too many requests — retry after {after} s", {"Retry-After": after}
        )

    def _refuse(self, scope: Scope) -> Response | None:
        g = self.guard
        if not auth.host_allowed(_header(scope, b"host"), g.allowed_hosts):
            return error_response(
                421, "invalid Host header — add it to server.mcp_allowed_hosts if it is yours"
            )
        if not auth.origin_allowed(_header(scope, b"origin"), g.allowed_origins):
            return error_response(
                403, "invalid Origin header — add it to server.mcp_allowed_origins if it is yours"
            )
        length = _header(scope, b"content-length")
        if length is not None and (not length.strip().isdigit() or int(length) > g.max_body_bytes):
            return error_response(413, f"request body over {g.max_body_bytes} bytes — send less")
        if _has_key_param(scope.get("query_string", b"")):
            return error_response(
                400, "API keys are not accepted in the URL — send `Authorization: Bearer <key>`"
            )
        is_mcp, slug = _mcp_target(scope["path"])
        if not is_mcp:
            return None
        served = self.serve.library.slugs()
        if slug is not None and slug not in served:
            return error_response(
                404, f"pack '{slug[:100]}' not found — available packs: {', '.join(served)}"
            )
        decision = auth.decide(g.ring, served, slug, auth.bearer_token(scope["headers"]))
        if decision.status != 200:
            return error_response(
                decision.status,
                decision.message,
                {"WWW-Authenticate": 'Bearer error="invalid_token"'}
                if decision.status == 401
                else None,
            )
        scope[PACKS_SCOPE_KEY] = decision.allowed
        return None


KEY_PARAMS = frozenset({"api_key", "apikey", "key", "token", "access_token"})


def _has_key_param(query: bytes) -> bool:
    names = {part.split(b"=", 1)[0].lower() for part in query.split(b"&") if part}
    return any(name.decode("latin-1") in KEY_PARAMS for name in names)


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    return receive


async def _drain_then(response: Response, scope: Scope, receive: Receive, send: Send) -> None:
    await response(scope, receive, send)


class PackMcpApp:
    """`/packs/{slug}/mcp`: hands the request to that pack's session manager."""

    def __init__(self, managers: dict[str, StreamableHTTPSessionManager]) -> None:
        self.managers = managers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        slug = scope.get("path_params", {}).get("slug", "")
        manager = self.managers.get(slug)
        if manager is None:
            await error_response(404, f"pack '{slug[:100]}' not found")(scope, receive, send)
            return
        await manager.handle_request(scope, receive, send)


class AllMcpApp:
    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        self.manager = manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.manager.handle_request(scope, receive, send)


def _manager(
    serve: ServeContext, slugs: Sequence[str] | None, max_body: int
) -> StreamableHTTPSessionManager:
    return StreamableHTTPSessionManager(
        app=build_server(serve, slugs),
        json_response=True,
        stateless=True,
        security_settings=None,  # the guard in front checks Host and Origin on every route
        max_request_body_size=max_body,
    )


def create_app(
    serve: ServeContext,
    server: ServerSettings,
    ring: auth.KeyRing,
    *,
    background: Callable[[], contextlib.AbstractAsyncContextManager[Any]] | None = None,
) -> Starlette:
    """The whole HTTP service. ``background`` (e.g. the file watcher) runs with the app."""
    guard = make_guard(serve, server, ring)
    every = _manager(serve, None, server.max_body_bytes)
    per_pack = {s: _manager(serve, [s], server.max_body_bytes) for s in serve.library.slugs()}

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "packs": len(serve.library.slugs())})

    async def packs(request: Request) -> Response:
        out = []
        for rt in serve.library:
            p = rt.pack
            out.append(
                {
                    "slug": p.slug,
                    "name": p.name,
                    "kind": p.kind,
                    "files": len(p.documents),
                    "auth": "api_key" if p.slug in ring.keyed else "none",
                    "mcp": f"/packs/{p.slug}/mcp",
                }
            )
        return JSONResponse({"packs": out})

    async def search(request: Request) -> Response:
        return await search_endpoint(request, serve, ring, error_response)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            await stack.enter_async_context(every.run())
            for m in per_pack.values():
                await stack.enter_async_context(m.run())
            if background is not None:
                await stack.enter_async_context(background())
            yield

    async def http_error(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
        if status == 404:
            detail = "no such route — try /search, /packs, /health, /mcp or /packs/{slug}/mcp"
        return error_response(status, str(detail))

    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        HTTPException: http_error,
    }
    app = Starlette(
        routes=[
            Route("/health", health, methods=["GET"]),
            Route("/packs", packs, methods=["GET"]),
            Route("/search", search, methods=["GET", "POST"]),
            Route("/mcp", AllMcpApp(every)),
            Route("/packs/{slug}/mcp", PackMcpApp(per_pack)),
        ],
        exception_handlers=handlers,
        lifespan=lifespan,
    )
    app.add_middleware(GuardMiddleware, guard=guard, serve=serve)
    return app


def dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, default=str)
