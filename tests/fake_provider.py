"""A fake HTTP embedding provider on 127.0.0.1, answering like OpenAI/Azure/Gemini/Voyage.

``script`` lists one-shot canned answers given before the normal one; ``fault`` is a standing
failure mode (the provider is down until it is set back to None). ``pause()``/``resume()`` close
and reopen the listening socket on the same port (connection refused in between). Every wait in
here is bounded; ``release`` frees any request left hanging.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HANG_S = 10.0  # how long a hanging request waits at most (clients time out well before)

# The eleven ways a provider fails (SPEC T19), as standing faults of the fake.
FAULTS = (
    "429",  # rate limited, with Retry-After
    "500",
    "503",
    "refused",  # nothing listens on the port
    "hang",  # the request is read and never answered
    "reset",  # the connection is reset half-way through the body
    "garbage",  # 200 with a body that is not JSON
    "dimension",  # vectors of the wrong size
    "nan",  # NaN and inf in the vectors
    "fewer",  # fewer vectors than inputs
    "401",  # the key is refused
)


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class FakeProvider:
    url: str = ""
    dimension: int = 8
    script: list[tuple[str, Any]] = field(default_factory=list)
    fault: str | None = None
    seen: list[Seen] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    _pause: Any = None  # set by serve(): closes the socket
    _resume: Any = None

    def pause(self) -> None:
        self._pause()

    def resume(self) -> None:
        self._resume()

    def down(self, fault: str) -> None:
        """Fail every request with ``fault`` until :meth:`up`."""
        self.release.clear()
        self.fault = fault
        if fault == "refused":
            self.pause()

    def up(self) -> None:
        if self.fault == "refused":
            self.resume()
        self.fault = None
        self.release.set()  # requests still hanging give up

    def answer(self, path: str, body: Any) -> tuple[int, dict[str, str], bytes]:
        with self.lock:
            step: tuple[str, Any] = self.script.pop(0) if self.script else ("ok", None)
        kind, arg = step
        if self.fault is not None and kind == "ok":
            kind, arg = self.fault, None
        if kind == "status":
            status, headers, text = arg
            return status, headers, text.encode()
        if kind in {"429", "500", "503", "401"}:
            headers = {"Retry-After": "2"} if kind == "429" else {}
            return int(kind), headers, b'{"error": {"message": "provider trouble"}}'
        if kind == "garbage":
            return 200, {"Content-Type": "application/json"}, b"<html>\x00\xff oops"
        if kind == "hang":
            self.release.wait(timeout=arg or HANG_S)
        dimension = (
            arg if kind == "dim" else 5 if kind == "dimension" else self.requested_dimension(body)
        )
        gemini = ":batchEmbedContents" in path
        count = len(body["requests"]) if gemini else len(body["input"])
        # deliberately not unit length, so renormalisation is exercised
        vectors: list[list[float]] = [
            [float(i + 1), 3.0] + [0.5] * (dimension - 2) for i in range(count)
        ]
        if kind == "nan":
            vectors[0][1], vectors[-1][0] = float("nan"), float("inf")
        if kind == "fewer":
            vectors = vectors[:-1] if count > 1 else []
        if gemini:
            payload: Any = {"embeddings": [{"values": v} for v in vectors]}
        else:  # OpenAI shape, in reverse order: clients must sort by index
            data = [{"index": i, "embedding": v} for i, v in enumerate(vectors)]
            payload = {"data": data[::-1], "model": "m", "usage": {}}
        return 200, {"Content-Type": "application/json"}, json.dumps(payload).encode()

    def requested_dimension(self, body: Any) -> int:
        if "requests" in body:
            return int(body["requests"][0].get("outputDimensionality", self.dimension))
        return int(body.get("dimensions", body.get("output_dimension", self.dimension)))


@contextmanager
def serve() -> Iterator[FakeProvider]:
    fake = FakeProvider()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"null")
            fake.seen.append(Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            if fake.fault == "reset" and not fake.script:
                self.reset_mid_body()
                return
            status, headers, data = fake.answer(self.path, body)
            try:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:  # the client gave up (timeout test)
                pass

        def reset_mid_body(self) -> None:
            """Headers promise 4096 bytes; a few arrive, then the connection is reset (RST)."""
            self.close_connection = True
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "4096")
                self.end_headers()
                self.wfile.write(b'{"data": [{"index": 0, "embedding": [0.1, ')
                self.wfile.flush()
                self.connection.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

        def log_message(self, format: str, *args: Any) -> None:
            pass

    state: dict[str, Any] = {}

    def start(port: int = 0) -> None:
        httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
        thread.start()
        state.update(httpd=httpd, thread=thread)

    def stop() -> None:
        httpd = state.pop("httpd", None)
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
            state.pop("thread").join(timeout=5)

    start()
    port = state["httpd"].server_address[1]
    fake.url = f"http://127.0.0.1:{port}"
    fake._pause = stop
    fake._resume = lambda: start(port)
    try:
        yield fake
    finally:
        fake.release.set()
        stop()
