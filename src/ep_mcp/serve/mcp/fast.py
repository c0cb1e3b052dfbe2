"""A fast path for stateless 2025-era `tools/call` requests, around the SDK's transport.

In stateless mode the SDK answers every handshake-era POST by building a transport, a pair of
memory streams, a JSON-RPC dispatcher and a server task, then tearing them down again; for a
`tools/call` that machinery cost more than a third of the request (`ep-mcp bench serve`,
docs/bench/serve.md). The SDK's own 2026-07-28 entry already serves one exchange inline
through `serve_one`; this module does the same for a single 2025-era `tools/call`.

Only the happy path is taken here. The request has passed the access decision of
`McpEndpoint` (this module is called after it, with the server built for that access), and it
is handled exactly as the SDK would handle it: the same header checks, the same JSON parser
and JSON-RPC model, and the same `ServerRunner` kernel (`serve_one`), which validates the
`tools/call` params against the negotiated protocol version and runs our handler. Anything
else — another method, a batch, a notification, a modern protocol version, a header or body
the SDK would refuse, or any exception from the kernel (only raised before our handler runs:
`run_tool` turns every failure into an `isError` result) — returns False and the caller hands
the request to the SDK unchanged, so every error keeps the SDK's shape.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import pydantic_core
from mcp.server.connection import Connection
from mcp.server.runner import serve_one
from mcp.server.streamable_http import check_accept_headers
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.message import MessageMetadata, ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import DEFAULT_NEGOTIATED_VERSION, JSONRPCRequest, RequestId, jsonrpc_message_adapter
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.requests import Request
from starlette.types import Scope, Send

logger = logging.getLogger(__name__)

_VERSION_HEADER = MCP_PROTOCOL_VERSION_HEADER.lower().encode("latin-1")
_JSON = "application/json"


@dataclass
class _OneExchange:
    """The `DispatchContext` of one stateless POST answered with JSON: no back-channel (as
    the SDK's stateless transport), and notifications have no wire in JSON mode."""

    transport: TransportContext
    request_id: RequestId
    message_metadata: MessageMetadata
    cancel_requested: anyio.Event = field(default_factory=anyio.Event)
    can_send_request: bool = field(default=False, init=False)

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> None:
        return None

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        return None


def _header(scope: Scope, name: bytes) -> str | None:
    return next((v.decode("latin-1") for k, v in scope["headers"] if k == name), None)


def _tool_call(scope: Scope, body: bytes) -> tuple[JSONRPCRequest, str] | None:
    """The request and its protocol version when this POST is one 2025-era `tools/call` the
    SDK's stateless JSON transport would accept; None for anything else."""
    version = _header(scope, _VERSION_HEADER)  # the SDK routes on the first such header
    if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
        return None  # the 2026-07-28 entry (or its rejection) is the SDK's own single exchange
    request = Request(scope)
    if not check_accept_headers(request)[0]:
        return None
    content_type = request.headers.get("content-type", "")
    if not any(p.strip() == _JSON for p in content_type.split(";")[0].split(",")):
        return None
    try:
        raw = pydantic_core.from_json(body)
    except ValueError:
        return None
    if not isinstance(raw, dict) or raw.get("method") != "tools/call":
        return None
    try:
        message = jsonrpc_message_adapter.validate_python(raw, by_name=False)
    except ValidationError:
        return None
    if not isinstance(message, JSONRPCRequest):
        return None
    return message, version or DEFAULT_NEGOTIATED_VERSION


async def answer_tool_call(
    manager: StreamableHTTPSessionManager, scope: Scope, body: bytes, send: Send
) -> bool:
    """Answer ``body`` when it is a plain stateless `tools/call`; False (nothing sent) when
    the SDK should handle it instead."""
    found = _tool_call(scope, body)
    if found is None:
        return False
    message, version = found
    dctx = _OneExchange(
        transport=TransportContext(kind="streamable-http", can_send_request=False),
        request_id=message.id,
        message_metadata=ServerMessageMetadata(request_context=Request(scope)),
    )
    connection = Connection.from_envelope(version, None, None)
    try:
        result = await serve_one(
            manager.app,
            dctx,
            message.method,
            message.params,
            connection=connection,
            # the state the manager entered the server's lifespan with (the SDK keeps it there)
            lifespan_state=manager._lifespan_state,
        )
    except Exception:  # refused before the handler ran: the SDK answers it in its own shape
        logger.debug("fast path declined a tools/call; the SDK answers it", exc_info=True)
        return False
    payload = pydantic_core.to_json({"jsonrpc": "2.0", "id": message.id, "result": result})
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode("latin-1")),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})
    return True
