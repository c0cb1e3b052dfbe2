"""Pure-ASGI middleware for the HTTP service, one concern each (outermost first):

- `NoStoreMiddleware`: `Cache-Control: no-store` on answers to a credential, and on 401/403;
- `ErrorBoundaryMiddleware`: an unhandled error becomes a logged 500 in the JSON envelope;
- `RateLimitMiddleware`: a token bucket per client address (429 + `Retry-After`);
- `ScreenMiddleware`: the request target (no control or space characters), exactly one valid
  Host on the allow-list (421), at most one Origin on the allow-list (403), no parameter named
  like an API key in the query string, however it is spelled or encoded (400);
- `BodyLimitMiddleware`: bodies over the cap get 413, read once and replayed to the app.

Authentication is not here: the MCP endpoints and `/search` decide it themselves from the
route the router matched, so the path the guard sees and the path that is served can never
disagree. Every refusal is `{"error": {"code", "message"}}`.
"""

from __future__ import annotations

import contextlib
import logging
import unicodedata
from collections.abc import Callable, Sequence
from urllib.parse import unquote_plus

import anyio
from starlette.datastructures import MutableHeaders
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ep_mcp.serve import auth
from ep_mcp.serve.http.ratelimit import RateLimiter

logger = logging.getLogger(__name__)

CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    408: "request_timeout",
    413: "payload_too_large",
    421: "misdirected_request",
    422: "unprocessable",
    429: "rate_limited",
    500: "internal_error",
    503: "unavailable",
}
# key-like parameter names, as compared: decoded, NFKC, case-folded, letters and digits only
# (`api_key`, `API-KEY`, `api%5Fkey`, `Api+Key` are all `apikey`)
KEY_PARAMS = frozenset(
    {
        "apikey",
        "key",
        "token",
        "accesstoken",
        "authtoken",
        "apitoken",
        "xapikey",
        "authorization",
        "bearer",
    }
)


def error_response(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    body = {"error": {"code": CODES.get(status, str(status)), "message": message}}
    return JSONResponse(body, status_code=status, headers=headers)


def header_values(scope: Scope, name: bytes) -> list[str]:
    return [v.decode("latin-1") for k, v in scope.get("headers", []) if k.lower() == name]


HeaderEdit = Callable[[int, MutableHeaders], None]  # (status, the response's headers)


class ResponseHeadersMiddleware:
    """Edits the headers of every HTTP response as it starts (``editor`` says how, once per
    request); lifespan and other scopes pass untouched."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    def editor(self, scope: Scope) -> HeaderEdit:
        raise NotImplementedError

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        edit = self.editor(scope)

        async def edited(message: Message) -> None:
            if message["type"] == "http.response.start":
                edit(message["status"], MutableHeaders(scope=message))
            await send(message)

        await self.app(scope, receive, edited)


class NoStoreMiddleware(ResponseHeadersMiddleware):
    """`Cache-Control: no-store` on every response to a request that carries a credential
    (an `Authorization` header, whatever it holds) and on every 401 and 403.

    Keyed content is served only to a request that carries the key, so no response holding a
    keyed pack's text, its listing or the hub's skills can be kept by a browser or a proxy —
    whichever route served it (search, MCP, the workbench, resources), and whatever an
    earlier layer set. A refusal is not kept either: the next try with a key must reach us.
    """

    def editor(self, scope: Scope) -> HeaderEdit:
        credential = any(k.lower() == b"authorization" for k, _ in scope.get("headers", []))

        def no_store(status: int, headers: MutableHeaders) -> None:
            kept = "no-store" in headers.get("cache-control", "").lower()
            if (credential or status in (401, 403)) and not kept:
                headers["Cache-Control"] = "no-store"

        return no_store


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


def param_name(raw: bytes) -> str:
    """A query parameter's name as the key screen compares it: percent- and `+`-decoded
    (repeatedly), NFKC-normalised, case-folded, with everything but letters and digits gone."""
    name = raw.decode("latin-1")
    while (decoded := unquote_plus(name, errors="replace")) != name:  # each round shortens it
        name = decoded
    return "".join(c for c in unicodedata.normalize("NFKC", name).casefold() if c.isalnum())


def has_key_param(query: bytes) -> bool:
    """True when any parameter of the raw query string is named like an API key (parameters
    split at `&` and `;`, so no parser's reading of the query hides one)."""
    parts = query.replace(b";", b"&").split(b"&")
    return any(param_name(part.split(b"=", 1)[0]) in KEY_PARAMS for part in parts if part)


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
        if has_key_param(scope.get("query_string", b"")):  # RFC 6750 §3.1: invalid_request
            return error_response(
                400,
                "API keys are not accepted in the URL — send `Authorization: Bearer <key>`",
                {"WWW-Authenticate": 'Bearer error="invalid_request"'},
            )
        return None


class BodyLimitMiddleware:
    """A body over ``max_bytes`` gets 413; one that has not arrived in full ``timeout_s``
    after the head (a slow POST) gets 408 and the connection is closed."""

    def __init__(self, app: ASGIApp, max_bytes: int, timeout_s: float = 60.0) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        too_big = error_response(413, f"request body over {self.max_bytes} bytes — send less")
        lengths = header_values(scope, b"content-length")
        if any(not v.strip().isdigit() or int(v) > self.max_bytes for v in lengths):
            await too_big(scope, receive, send)
            return
        with anyio.move_on_after(self.timeout_s) as waited:
            body = await read_body(receive, self.max_bytes)
        if waited.cancelled_caught:
            slow = error_response(
                408,
                f"the request body did not arrive within {self.timeout_s:g} s — send it at once",
                {"Connection": "close"},
            )
            await slow(scope, receive, send)
            return
        if body is None:
            await too_big(scope, receive, send)
            return
        await self.app(scope, replay(body, then=receive), send)  # then: the real disconnect


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


def replay(body: bytes, then: Receive | None = None) -> Receive:
    """A `receive` that hands the app ``body`` once, then a disconnect — or, with ``then``
    (the request's own `receive`, its body already read), what it says: the client's
    disconnect, for a response that streams until then."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        if then is not None:
            return await then()
        return {"type": "http.disconnect"}

    return receive
