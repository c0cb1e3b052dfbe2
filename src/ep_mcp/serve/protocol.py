"""The HTTP/1.1 protocol the service runs on: uvicorn's h11 protocol with one write per
response (serve/http/wire.py) and two guards no ASGI middleware can give, as they act before a
request exists:

- **A header deadline.** A request's line and headers must all arrive within
  ``server.header_timeout_s`` of the moment the server starts waiting for them (the
  connection opened, or the previous response on it was sent). Past it, a connection holding
  part of a request head is answered 408 and closed; one that sent nothing is closed. uvicorn's
  ``timeout_keep_alive`` covers only an idle connection and is reset by every byte, and h11 has
  no read timeout, so a client dribbling a header a byte at a time (slowloris) would otherwise
  hold its connection for good. Once the head is in, the deadline is off and long answers are
  never cut; a body's size is bounded (``server.max_body_bytes``), its pace is not.
- **Malformed HTTP** that h11 refuses (a bad request line or header, a head over h11's 16 KiB,
  a bad Content-Length) is answered 400 in the JSON error envelope, not uvicorn's plain text.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import h11
from uvicorn.config import Config
from uvicorn.server import ServerState

from ep_mcp.serve.http.middleware import CODES
from ep_mcp.serve.http.wire import OneWriteH11Protocol

logger = logging.getLogger(__name__)

DEFAULT_HEADER_TIMEOUT_S = 10.0


def envelope_response(status: int, reason: str, message: str) -> bytes:
    """A whole `Connection: close` HTTP/1.1 response carrying the JSON error envelope."""
    code = CODES.get(status, str(status))
    body = json.dumps({"error": {"code": code, "message": message}}).encode("utf-8")
    head = (
        f"HTTP/1.1 {status} {reason}\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        "cache-control: no-store\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class GuardedH11Protocol(OneWriteH11Protocol):
    """`OneWriteH11Protocol` with the header deadline and the JSON 400 (see the module doc).

    Passed to uvicorn as ``functools.partial(GuardedH11Protocol, header_timeout_s=...)``: a
    module-level class, as ``--workers`` pickles the config.
    """

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
        *,
        header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.header_timeout_s = header_timeout_s
        self._head_timer: asyncio.TimerHandle | None = None

    # -- the header deadline --------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._watch_head()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch_head()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch_head()  # keep-alive: the next request's head is awaited from now

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _watch_head(self) -> None:
        """Armed while a request head is awaited (h11 `IDLE` on the client's side), from the
        moment the wait began — never reset by the bytes that arrive; off once it is in."""
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            self._disarm()
        elif self._head_timer is None:
            self._head_timer = self.loop.call_later(self.header_timeout_s, self._head_late)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_late(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        if self.conn.trailing_data[0]:  # part of a head: say why, then close
            logger.info(
                "closing a connection from %s: its request headers did not arrive within %s s",
                self.client[0] if self.client else "an unknown address",
                self.header_timeout_s,
            )
            message = (
                f"the request headers did not arrive within {self.header_timeout_s:g} s — "
                "send the whole request head at once"
            )
            self.transport.write(envelope_response(408, "Request Timeout", message))
        self.transport.close()

    # -- malformed HTTP -------------------------------------------------------------------

    def send_400_response(self, msg: str) -> None:
        del msg  # uvicorn's "Invalid HTTP request received."
        message = (
            "invalid HTTP request — check the request line and headers (at most 16 KiB in all, "
            "one valid Content-Length)"
        )
        self.transport.write(envelope_response(400, "Bad Request", message))
        self.transport.close()
