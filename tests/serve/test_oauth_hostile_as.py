"""An authorization server that drips its answer over a real socket, a byte at a time (attack
pass): each byte comes well within the per-read timeout, so before the fix a fetch of the keys
was held for as long as the server kept dripping (hours, for 1 MB of headers or body) while
every other token of that issuer waited on the key set's lock. Now the whole exchange is cut
at ``timeout_s``: `Unavailable`, and the token `Rejected`."""

from __future__ import annotations

import contextlib
import socket
import threading
import urllib.request
from collections.abc import Callable, Iterator

import pytest

from ep_mcp.config.model import OAuthSettings
from ep_mcp.serve.oauth import Rejected, TokenVerifier, Unavailable, fetch_json

Behaviour = Callable[[socket.socket, threading.Event], None]


def drip_headers(conn: socket.socket, stop: threading.Event) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
    while not stop.wait(0.02):
        conn.sendall(b"a")


def drip_body(conn: socket.socket, stop: threading.Event) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n[")
    while not stop.wait(0.02):
        conn.sendall(b" ")


@pytest.fixture
def hostile() -> Iterator[Callable[[Behaviour], str]]:
    stop = threading.Event()
    threads: list[threading.Thread] = []
    listeners: list[socket.socket] = []

    def serve(behaviour: Behaviour) -> str:
        listener = socket.create_server(("127.0.0.1", 0))
        listener.settimeout(0.1)  # so the thread sees `stop` (close does not end accept)
        listeners.append(listener)

        def run() -> None:
            while not stop.is_set():
                try:
                    conn, _ = listener.accept()
                except TimeoutError:
                    continue
                except OSError:
                    return
                conn.settimeout(None)
                with conn:
                    conn.recv(65536)
                    with contextlib.suppress(OSError):  # the client gave up: the point
                        behaviour(conn, stop)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        threads.append(thread)
        return f"http://127.0.0.1:{listener.getsockname()[1]}/jwks"

    yield serve
    stop.set()
    for listener in listeners:
        listener.close()
    for thread in threads:
        thread.join(10)


def _fetch_bounded(url: str, timeout: float) -> BaseException | object:
    """fetch_json in a thread, waited for at most 60 s (the drip would last hours)."""
    out: list[BaseException | object] = []

    def run() -> None:
        try:
            out.append(fetch_json(urllib.request.Request(url), timeout))
        except BaseException as exc:  # what it raised is the test's subject
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "the fetch is still held by a dripping server"
    return out[0]


@pytest.mark.parametrize("behaviour", [drip_headers, drip_body])
def test_a_bad_answer_is_unavailable(
    hostile: Callable[[Behaviour], str], behaviour: Behaviour
) -> None:
    result = _fetch_bounded(hostile(behaviour), timeout=0.5)
    assert isinstance(result, Unavailable), repr(result)
    assert "\n" not in str(result)


def test_a_token_whose_keys_drip_in_is_refused_at_the_timeout(
    hostile: Callable[[Behaviour], str],
) -> None:
    import jwt
    from cryptography.hazmat.primitives.asymmetric import rsa

    settings = OAuthSettings(
        issuers=("https://auth.example.com",),
        resource="https://kb.example.com",
        jwks_url=hostile(drip_body),
        timeout_s=0.5,
    )
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    token = jwt.encode(
        {"iss": "https://auth.example.com", "aud": "https://kb.example.com", "exp": 4e9},
        key,
        algorithm="RS256",
        headers={"kid": "k1"},
    )
    verifier = TokenVerifier(settings)
    out: list[object] = []
    thread = threading.Thread(
        target=lambda: out.append(verifier.verify(token, ["https://kb.example.com"])), daemon=True
    )
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "the verifier is still held by a dripping key server"
    assert isinstance(out[0], Rejected)
