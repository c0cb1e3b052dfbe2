"""Asking the authorization server: one JSON document per fetch, bounded in size and time,
and a backoff so a dead server is asked once per interval, not once per request.

`fetch_json` bounds the whole exchange, from connecting to the last byte (`timeout`), follows
no redirect and reads at most `MAX_DOCUMENT_BYTES`; anything else is `Unavailable`. After a
failure a `Backoff` waits `FIRST_S` before the next attempt, doubling with each further
failure up to `MOST_S`; a success resets it. Callers refuse in between, as on a failure.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

MAX_DOCUMENT_BYTES = 1_000_000  # a JWKS, metadata or introspection answer
FIRST_S = 1.0
MOST_S = 30.0


class Unavailable(Exception):
    """The authorization server could not be asked (down, slow, or not answering JSON)."""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # a redirect is an error: keys come from the URL configured or discovered


_exchange = threading.local()  # this thread's fetch: its deadline and the timers armed for it


def _arm(sock: socket.socket) -> None:
    """Shut ``sock`` down when this thread's fetch runs past its deadline: a server dripping a
    byte at a time never trips the per-read timeout, and would hold the fetch for hours."""
    at: float | None = getattr(_exchange, "at", None)
    if at is None:
        return

    def shut() -> None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)

    timer = threading.Timer(max(0.0, at - time.monotonic()), shut)
    timer.daemon = True
    timer.start()
    _exchange.timers.append(timer)


def _deadline_class(base: type[http.client.HTTPConnection]) -> type[http.client.HTTPConnection]:
    class WithDeadline(base):  # type: ignore[valid-type,misc]
        def connect(self) -> None:
            super().connect()
            _arm(self.sock)

    return WithDeadline


class _Deadline:
    def do_open(self, http_class: Any, req: Any, **kwargs: Any) -> Any:
        return super().do_open(_deadline_class(http_class), req, **kwargs)  # type: ignore[misc]


class _HTTP(_Deadline, urllib.request.HTTPHandler):
    pass


class _HTTPS(_Deadline, urllib.request.HTTPSHandler):
    pass


_OPENER = urllib.request.build_opener(_NoRedirect, _HTTP, _HTTPS)


def fetch_json(request: urllib.request.Request, timeout: float) -> Mapping[str, Any]:
    """One JSON object over HTTP, bounded in size and, from connecting to the last byte, in
    time (``timeout``); anything else is `Unavailable`."""
    _exchange.at, _exchange.timers = time.monotonic() + timeout, []
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            raw = response.read(MAX_DOCUMENT_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise Unavailable(f"HTTP {exc.code}") from None
    except (OSError, ValueError, http.client.HTTPException) as exc:  # refused, timeouts, cut
        if time.monotonic() >= _exchange.at:
            raise Unavailable(f"no complete answer within {timeout:g} s") from None
        reason = getattr(exc, "reason", None) or exc
        raise Unavailable(f"{type(exc).__name__}: {str(reason)[:200]}") from None
    finally:
        for timer in _exchange.timers:
            timer.cancel()
        _exchange.at, _exchange.timers = None, []
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise Unavailable(f"answer over {MAX_DOCUMENT_BYTES} bytes")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        raise Unavailable("answer is not JSON") from None
    if not isinstance(data, dict):
        raise Unavailable("answer is not a JSON object")
    return data


class Backoff:
    """The wait after the last failure of one service (``monotonic`` times it)."""

    def __init__(self, monotonic: Callable[[], float], most: float = MOST_S) -> None:
        self._monotonic = monotonic
        self._most = most
        self._wait = 0.0
        self._until: float | None = None
        self._lock = threading.Lock()

    def left(self) -> float:
        """Seconds before the service may be asked again (0: ask now)."""
        with self._lock:
            if self._until is None:
                return 0.0
            return max(0.0, self._until - self._monotonic())

    def failed(self) -> float:
        """Note a failure; the seconds the next attempt waits."""
        with self._lock:
            self._wait = min(self._most, self._wait * 2 if self._wait else FIRST_S)
            self._until = self._monotonic() + self._wait
            return self._wait

    def succeeded(self) -> None:
        with self._lock:
            self._wait, self._until = 0.0, None
