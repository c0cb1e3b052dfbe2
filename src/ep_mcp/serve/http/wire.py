"""One write per response: the status line, headers and body leave the process together.

uvicorn writes a response's head when the app sends ``http.response.start`` and the body
in a second write. A replica killed between the two (SIGKILL, the OOM killer, a crash) has
put only the head on the wire: nginx has already passed it to the client, so it cannot try
another replica, and the client gets a response cut off before its first body byte. Under
load the gap is wide — the event loop gives up the GIL in the first ``send()`` and may wait
for it behind the search threads before the second.

`OneWriteTransport` holds every write made during one step of the event loop and hands it
to the socket at once, on the next loop turn. A JSON response (start and body sent without
an ``await`` that yields in between, as Starlette's `Response` does) then reaches nginx
whole or not at all; nothing on the wire means nginx's ``proxy_next_upstream error`` sends
the request to the next replica. A body larger than the socket buffer, or a streamed one,
can still be cut: nginx cannot retry once it has sent the head on.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from uvicorn.protocols.http.h11_impl import H11Protocol


class OneWriteTransport:
    """A transport whose writes within one event-loop step become one socket write."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._pending: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if not self._pending:
            asyncio.get_running_loop().call_soon(self.flush)
        self._pending.append(bytes(data))

    def writelines(self, lines: Any) -> None:
        for data in lines:
            self.write(data)

    def flush(self) -> None:
        if not self._pending:
            return
        data = b"".join(self._pending)
        self._pending.clear()
        if not self._transport.is_closing():
            self._transport.write(data)

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(map(len, self._pending))

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._pending.clear()
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:  # reading, addresses, protocol: as they are
        return getattr(self._transport, name)


class _OneWrite:
    """Mixin for a uvicorn HTTP protocol: its transport is a `OneWriteTransport`."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        super().connection_made(cast(asyncio.Transport, OneWriteTransport(transport)))  # type: ignore[misc]


class OneWriteH11Protocol(_OneWrite, H11Protocol):
    """uvicorn's h11 protocol (its default without httptools) on a `OneWriteTransport`.

    Passed as uvicorn's ``http``; a module-level class, as ``--workers`` pickles the config.
    """
