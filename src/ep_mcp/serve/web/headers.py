"""Security headers on every response of the HTTP service (pure ASGI, one concern).

A strict Content-Security-Policy (scripts and styles only from this origin, no inline script,
no plugins, no framing, requests only back to this origin), `nosniff`, frame denial and no
referrer. The workbench is written to need nothing more; JSON responses carry the same
headers, which cost nothing there.
"""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import Scope

from ep_mcp.serve.http.middleware import HeaderEdit, ResponseHeadersMiddleware

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
}


class SecurityHeadersMiddleware(ResponseHeadersMiddleware):
    def editor(self, scope: Scope) -> HeaderEdit:
        return set_missing


def set_missing(status: int, headers: MutableHeaders) -> None:
    """The security headers an earlier layer did not set (whatever the status)."""
    for name, value in HEADERS.items():
        if name not in headers:
            headers[name] = value
