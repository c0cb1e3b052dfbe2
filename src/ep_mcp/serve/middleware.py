"""Pure-ASGI middleware for the HTTP service, one concern each (outermost first):

- `ErrorBoundaryMiddleware`: an unhandled error becomes a logged 500 in the JSON envelope;
- `RateLimitMiddleware`: a token bucket per client address (429 + `Retry-After`);
- `ScreenMiddleware`: the request target (no control or space characters), exactly one valid
  Host on the allow-list (421), at most one Origin on the allow-list (403), no API key in the
  query string (400);
- `BodyLimitMiddleware`: bodies over the cap get 413, read once and replayed to the app.

Authentication is not here: the MCP endpoints and `/search` decide it themselves from the
route the router matched, so the path the guard sees and the path that is served can never
disagree. Every refusal is `{"error": {"code", "message"}}`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence

from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ep_mcp.serve import auth
from ep_mcp.serve.ratelimit import RateLimiter

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
KEY_PARAMS = frozenset({"api_key", "apikey", "key", "token", "access_token"})


def error_response(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    body = {"error": {"code": CODES.get(status, str(status)), "message": message}}
    return JSONResponse(body, status_code=status, headers=headers)


def header_values(scope: Scope, name: bytes) -> list[str]:
    return [v.decode("latin-1") for k, v in scope.get("headers", []) if k.lower() == name]


class ErrorBoundaryMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception:  # the outermost boundary: log it, answer with the envelope
            logger.exception("unhandled error on %s %r", scope["method"], scope["path"][:200])
            if not started:
                with contextlib.suppress(Exception):
                    await error_response(500, "internal error — see the server log")(
                        scope, receive, send
                    )


class RateLimitMiddleware:
    """Every route but `/health`, keyed by the client address (as uvicorn and any trusted
    proxy-header middleware set it — never by a forwarded header from an untrusted peer)."""

    def __init__(self, app: ASGIApp, limiter: RateLimiter) -> None:
        self.app = app
        self.limiter = limiter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] != "/health":
            client = scope.get("client")
            wait = self.limiter.wait_for(str(client[0]) if client else "unknown")
            if wait > 0:
                after = self.limiter.retry_after(wait)
                response = error_response(
                    429, f"too many requests — retry after {after} s", {"Retry-After": after}
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _bad_target(path: str) -> bool:
    return any(ord(c) < 0x21 or ord(c) == 0x7F for c in path)


def _has_key_param(query: bytes) -> bool:
    names = {part.split(b"=", 1)[0].lower() for part in query.split(b"&") if part}
    return any(name.decode("latin-1") in KEY_PARAMS for name in names)


class ScreenMiddleware:
    def __init__(
        self, app: ASGIApp, allowed_hosts: Sequence[str], allowed_origins: Sequence[str]
    ) -> None:
        self.app = app
        self.allowed_hosts = tuple(allowed_hosts)
        self.allowed_origins = tuple(allowed_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refusal = self.refuse(scope) if scope["type"] == "http" else None
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def refuse(self, scope: Scope) -> Response | None:
        if _bad_target(scope["path"]):
            return error_response(
                400, "invalid request path — it contains control or space characters"
            )
        if not auth.host_allowed(header_values(scope, b"host"), self.allowed_hosts):
            return error_response(
                421,
                "invalid Host header — send exactly one valid host; add it to "
                "server.mcp_allowed_hosts if it is yours",
            )
        if not auth.origin_allowed(header_values(scope, b"origin"), self.allowed_origins):
            return error_response(
                403, "invalid Origin header — add it to server.mcp_allowed_origins if it is yours"
            )
        if _has_key_param(scope.get("query_string", b"")):
            return error_response(
                400, "API keys are not accepted in the URL — send `Authorization: Bearer <key>`"
            )
        return None


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        too_big = error_response(413, f"request body over {self.max_bytes} bytes — send less")
        lengths = header_values(scope, b"content-length")
        if any(not v.strip().isdigit() or int(v) > self.max_bytes for v in lengths):
            await too_big(scope, receive, send)
            return
        body = await read_body(receive, self.max_bytes)
        if body is None:
            await too_big(scope, receive, send)
            return
        await self.app(scope, replay(body), send)


async def read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole request body, or None past ``limit`` bytes."""
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


def replay(body: bytes) -> Receive:
    """A `receive` that hands the app ``body`` once, then a disconnect."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    return receive
