"""The guards below the ASGI app, on a real uvicorn on 127.0.0.1 with the service's own
protocol options: a request head that does not arrive within `server.header_timeout_s` is
answered 408 and closed (slowloris), and malformed HTTP gets 400 in the JSON envelope.

No test here decides on the wall clock: each waits, with a generous bound, for the server to
close the connection, and a server that never closes fails at the bound."""

from __future__ import annotations

import json
import pickle
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from ep_mcp.config.load import load_settings
from ep_mcp.errors import ConfigError
from ep_mcp.serve.app import _uvicorn_options
from ep_mcp.serve.auth import KeyRing
from ep_mcp.serve.http.app import create_app

HEADER_TIMEOUT_S = 1.0
BODY_TIMEOUT_S = 4.0  # above the slow-body test's 2.5 header timeouts, so that one passes
BOUND_S = 30.0  # a server that has not closed by now never will


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(open_ctx: Any) -> Iterator[int]:
    """A real uvicorn over the open packs, started as `serve` starts it; yields its port."""
    import uvicorn

    port = _free_port()
    settings = load_settings(
        data={
            "server": {
                "port": port,
                "header_timeout_s": HEADER_TIMEOUT_S,
                "body_timeout_s": BODY_TIMEOUT_S,
                "log_level": "ERROR",
            }
        }
    ).server
    app = create_app(open_ctx, settings, KeyRing.build({"alpha": ["sk-alpha"], "beta": []}))
    srv = uvicorn.Server(uvicorn.Config(app, lifespan="on", **_uvicorn_options(settings)))  # type: ignore[arg-type]
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not srv.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield port
    finally:
        srv.should_exit = True
        thread.join(timeout=30)


def _connect(port: int) -> socket.socket:
    conn = socket.create_connection(("127.0.0.1", port), timeout=BOUND_S)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return conn


def _read_until_closed(conn: socket.socket) -> bytes:
    """Everything the server sends until it closes (a bounded wait: the socket's timeout)."""
    out = b""
    while True:
        try:
            chunk = conn.recv(65536)
        except ConnectionResetError:
            return out
        if not chunk:
            return out
        out += chunk


def _closed_while_dribbling(conn: socket.socket, dribble: bytes) -> bytes:
    """Send ``dribble`` one byte at a time, slowly, until the server closes the connection;
    what it sent back. Fails if it is still open after BOUND_S."""
    conn.settimeout(0.25)
    received = b""
    deadline = time.monotonic() + BOUND_S
    i = 0
    while time.monotonic() < deadline:
        try:
            chunk = conn.recv(65536)
            if not chunk:
                return received
            received += chunk
            continue
        except TimeoutError:
            pass
        except ConnectionResetError:
            return received
        try:
            conn.sendall(dribble[i % len(dribble) : i % len(dribble) + 1])
        except (BrokenPipeError, ConnectionResetError):
            return received + _read_until_closed(conn)
        i += 1
    raise AssertionError(f"the server kept a dribbling connection open for {BOUND_S} s")


def _status_and_body(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
    return int(lines[0].split(" ")[1]), {k.lower(): v for k, v in headers.items()}, body


def test_a_request_head_dribbled_byte_by_byte_is_answered_408_and_closed(server: int) -> None:
    with _connect(server) as conn:
        conn.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        out = _closed_while_dribbling(conn, b"X-Slow: aaaaaaaaaaaaaaaa\r\n")
    status, headers, body = _status_and_body(out)
    assert status == 408 and headers["content-type"] == "application/json"
    error = json.loads(body)["error"]
    assert error["code"] == "request_timeout" and "header" in error["message"]


def test_a_connection_that_sends_nothing_is_closed(server: int) -> None:
    with _connect(server) as conn:
        assert _read_until_closed(conn) == b""  # closed without a word: no request to answer


def test_after_a_keep_alive_response_the_next_head_has_the_same_deadline(server: int) -> None:
    with _connect(server) as conn:
        conn.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        first = b""
        while b'"status"' not in first:
            chunk = conn.recv(65536)
            assert chunk, "closed before the first answer"
            first += chunk
        assert first.startswith(b"HTTP/1.1 200")
        conn.sendall(b"GET /health HTTP/1.1\r\n")
        out = _closed_while_dribbling(conn, b"X-Slow: b\r\n")
    assert _status_and_body(out)[0] == 408


def test_a_body_sent_slowly_after_a_whole_head_is_not_cut(server: int) -> None:
    """The deadline is on the head only: a body may take longer (the body cap bounds it)."""
    body = b'{"q": "tomatoes", "pack": "beta"}'
    head = (
        b"POST /search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n"
    )
    with _connect(server) as conn:
        conn.sendall(head)
        waited = 0.0
        for i in range(0, len(body), 8):  # at least 2.5 header timeouts in all
            time.sleep(HEADER_TIMEOUT_S / 2)
            waited += HEADER_TIMEOUT_S / 2
            conn.sendall(body[i : i + 8])
        assert waited > HEADER_TIMEOUT_S * 2
        status, _, answer = _status_and_body(_read_until_closed(conn))
    assert status == 200 and json.loads(answer)["results"][0]["source_file"] == "gardening.md"


def test_a_body_that_stops_arriving_is_answered_408_and_closed(server: int) -> None:
    """The slow-POST form: a whole head, then part of the body and nothing more."""
    head = (
        b"POST /search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: 100\r\n\r\n"
    )
    with _connect(server) as conn:
        conn.sendall(head + b'{"q": "tom')
        status, headers, body = _status_and_body(_read_until_closed(conn))
    assert status == 408 and headers["content-type"] == "application/json"
    assert json.loads(body)["error"]["code"] == "request_timeout"
    assert "body_timeout_s" not in body.decode() and "did not arrive within 4 s" in body.decode()


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GARBAGE\r\n\r\n",
        b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n",
        b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 20_000,  # unfinished
        b"POST /search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1x\r\n\r\n",
        b"POST /search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n"
        b"Content-Length: 3\r\n\r\n",
    ],
    ids=["request line", "header line", "head over 16 KiB", "content-length", "two lengths"],
)
def test_malformed_http_gets_400_in_the_json_envelope(server: int, request_bytes: bytes) -> None:
    with _connect(server) as conn:
        conn.sendall(request_bytes)
        status, headers, body = _status_and_body(_read_until_closed(conn))
    assert status == 400 and headers["content-type"] == "application/json"
    error = json.loads(body)["error"]
    assert error["code"] == "bad_request" and "invalid HTTP request" in error["message"]


def test_the_server_keeps_answering_after_the_guards_closed_connections(server: int) -> None:
    with _connect(server) as conn:
        conn.sendall(
            b"GET /search?q=tomatoes&pack=beta HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Connection: close\r\n\r\n"
        )
        status, _, body = _status_and_body(_read_until_closed(conn))
    assert status == 200 and b"gardening.md" in body


@pytest.mark.parametrize("value", [b"", b"   ", b"Bearer", b"Bearer  "], ids=repr)
def test_a_blank_authorization_header_on_the_wire_is_refused(server: int, value: bytes) -> None:
    with _connect(server) as conn:
        conn.sendall(
            b"GET /search?q=tomatoes HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: "
            + value
            + b"\r\nConnection: close\r\n\r\n"
        )
        status, headers, _ = _status_and_body(_read_until_closed(conn))
    assert status == 401 and "no-store" in headers["cache-control"]


def test_the_protocol_options_survive_the_pickling_of_workers() -> None:
    settings = load_settings(data={"server": {"header_timeout_s": 7.5}}).server
    http = pickle.loads(pickle.dumps(_uvicorn_options(settings)["http"]))
    assert http.keywords == {"header_timeout_s": 7.5}


@pytest.mark.parametrize("value", [0, -1, 601, 0.0])
def test_header_timeout_s_out_of_range_is_a_config_error(value: float) -> None:
    with pytest.raises(ConfigError, match=r"server\.header_timeout_s: must be .* above 0"):
        load_settings(data={"server": {"header_timeout_s": value}})


@pytest.mark.parametrize("query", [b"API_KEY=sk-alpha", b"api%5Fkey=sk-alpha", b"Api+Key=sk-alpha"])
def test_a_key_parameter_on_the_wire_is_refused_in_the_envelope(server: int, query: bytes) -> None:
    with _connect(server) as conn:
        conn.sendall(
            b"GET /search?q=routing&pack=alpha&" + query + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Connection: close\r\n\r\n"
        )
        status, headers, body = _status_and_body(_read_until_closed(conn))
    assert status == 400 and headers["content-type"] == "application/json"
    assert "Authorization: Bearer" in json.loads(body)["error"]["message"]
    assert b"sk-alpha" not in body
