"""One write per response: a replica killed mid-response leaves nginx nothing or everything."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import textwrap

import pytest

from ep_mcp.serve.http.wire import OneWriteTransport


class FakeTransport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str) -> str:
        return f"info:{name}"


def test_writes_made_in_one_loop_step_leave_in_one_socket_write() -> None:
    async def go() -> list[bytes]:
        fake = FakeTransport()
        wire = OneWriteTransport(fake)  # type: ignore[arg-type]
        wire.write(b"HTTP/1.1 200 OK\r\n\r\n")
        wire.write(b"")
        wire.write(b'{"ok": true}')
        assert fake.writes == [] and wire.get_write_buffer_size() == 31
        await asyncio.sleep(0)
        wire.write(b"next")
        await asyncio.sleep(0)
        return fake.writes

    assert asyncio.run(go()) == [b'HTTP/1.1 200 OK\r\n\r\n{"ok": true}', b"next"]


def test_close_sends_what_is_held_first_and_the_rest_passes_through() -> None:
    async def go() -> FakeTransport:
        fake = FakeTransport()
        wire = OneWriteTransport(fake)  # type: ignore[arg-type]
        wire.write(b"last words")
        wire.close()
        wire.write(b"after close")
        await asyncio.sleep(0)
        assert wire.get_extra_info("peername") == "info:peername"
        return fake

    fake = asyncio.run(go())
    assert fake.writes == [b"last words"] and fake.closed


SERVER = textwrap.dedent(
    """
    import os, signal, socket, sys
    import uvicorn
    from uvicorn.protocols.http.h11_impl import H11Protocol
    from ep_mcp.serve.http.wire import OneWriteH11Protocol

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", b"2")]})
        os.kill(os.getpid(), signal.SIGKILL)  # dies before the body, as a kill -9 can
        await send({"type": "http.response.body", "body": b"{}"})

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)  # the kernel queues the test's connection until uvicorn accepts it
    print(sock.getsockname()[1], flush=True)
    protocol = OneWriteH11Protocol if sys.argv[1] == "one-write" else H11Protocol
    config = uvicorn.Config(app, http=protocol, log_level="warning", lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])
    """
)


@pytest.mark.parametrize(
    ("protocol", "seen"),
    [("one-write", b""), ("uvicorn-h11", b"HTTP/1.1 200 OK\r\n")],
    ids=["ours: nothing, so nginx tries the next replica", "plain: a head with no body"],
)
def test_a_server_killed_between_head_and_body_puts_no_byte_on_the_wire(
    protocol: str, seen: bytes
) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER, protocol], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        received = b""
        conn = socket.create_connection(("127.0.0.1", port), timeout=60)
        with conn:
            conn.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            try:
                while chunk := conn.recv(65536):
                    received += chunk
            except ConnectionResetError:
                pass
        assert proc.wait(timeout=30) == -9
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert received[: len(seen)] == seen and (seen or received == b"")
