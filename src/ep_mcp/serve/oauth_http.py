"""OAuth over HTTP: what a request's bearer value is, the challenge of a refusal, and the
protected-resource metadata (RFC 9728).

`Gate.credential` turns the `Authorization` header into what `auth.decide` weighs: an API
key's bytes (a value equal to a configured key is a key), a verified token's `TokenGrant`, or
`Credential.INVALID` for a token that does not verify. Without `server.auth` it is the header's
bytes, as before. A route's resource identifier is the configured origin plus the route's path
(`/mcp`, `/packs/{slug}/mcp`); a token's `aud` may name it or the origin itself.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from anyio import to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Scope

from ep_mcp.config.model import OAuthSettings
from ep_mcp.serve import auth
from ep_mcp.serve.http.middleware import error_response
from ep_mcp.serve.oauth import HUB_SCOPE, PACK_SCOPE, Rejected, TokenVerifier

logger = logging.getLogger(__name__)

WELL_KNOWN = "/.well-known/oauth-protected-resource"
SLUG = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # a pack slug (packs/expertpack.py)
MAX_SLUG = 100


class Gate:
    """API keys and, with ``settings`` enabled, access tokens: one credential per request."""

    def __init__(
        self, ring: auth.KeyRing, settings: OAuthSettings, verifier: TokenVerifier | None = None
    ) -> None:
        self.settings = settings
        self.enabled = settings.enabled
        self.ring = ring
        self.origin = (settings.resource or "").rstrip("/")
        self.verifier = verifier
        if self.enabled and verifier is None:
            self.verifier = TokenVerifier(settings)

    async def credential(self, scope: Scope, route: str = "") -> auth.Presented:
        """What this request presents on ``route`` (a path such as `/mcp`; "" for others)."""
        presented = auth.bearer_token(scope.get("headers", []))
        if not self.enabled or not isinstance(presented, bytes) or self.ring.is_key(presented):
            return presented
        assert self.verifier is not None
        try:
            token = presented.decode("ascii")
        except UnicodeDecodeError:
            return auth.Credential.INVALID
        audiences = [self.origin, self.origin + "/"] + ([self.origin + route] if route else [])
        result = await to_thread.run_sync(self.verifier.verify, token, audiences)
        if isinstance(result, Rejected):
            logger.debug("bearer token refused: %s", result.reason)
            return auth.Credential.INVALID
        return result

    def metadata_url(self, route: str = "") -> str:
        return self.origin + WELL_KNOWN + route

    def challenge(self, decision: auth.Decision, route: str = "") -> dict[str, str] | None:
        """The `WWW-Authenticate` header of a refusal (401, and 403 for a token's scopes)."""
        if not self.enabled:
            if decision.status == 401:
                return {"WWW-Authenticate": 'Bearer error="invalid_token"'}
            return None
        if decision.status not in (401, 403) or (decision.status == 403 and not decision.error):
            return None
        parts = []
        if decision.error:
            parts.append(f'error="{decision.error}"')
        if decision.scope:
            parts.append(f'scope="{decision.scope}"')
        parts.append(f'resource_metadata="{self.metadata_url(route)}"')
        return {"WWW-Authenticate": "Bearer " + ", ".join(parts)}

    def document(self, route: str, scopes: Sequence[str]) -> dict[str, object]:
        """The protected-resource metadata of the resource ``origin + route``."""
        return {
            "resource": self.origin + route,
            "authorization_servers": list(self.settings.issuers),
            "scopes_supported": list(scopes),
            "bearer_methods_supported": ["header"],
            "resource_name": "ep-mcp",
        }


def metadata_routes(gate: Gate, hub: bool) -> list[Route]:
    """`/.well-known/oauth-protected-resource` for the origin, `/mcp` and each pack's route
    (RFC 9728 §3.1: the resource's path after the well-known name). None without OAuth."""
    if not gate.enabled:
        return []

    # the origin's and /mcp's documents are read by anyone: they name no pack (a slug the
    # caller may not see is not told; `GET /packs` hides it too) — a pack's scope is on its own
    # route, which the caller names
    shared = [HUB_SCOPE] if hub else []

    async def root(request: Request) -> Response:
        return JSONResponse(gate.document("", shared))

    async def mcp(request: Request) -> Response:
        return JSONResponse(gate.document("/mcp", shared))

    async def pack(request: Request) -> Response:
        # every well-formed slug gets its document, served or not: a 404 for unknown slugs
        # told an anonymous caller which hidden ones exist. The document only echoes the
        # slug the caller named (its scope); the route itself refuses alike without a token.
        slug = str(request.path_params["slug"])
        if len(slug) > MAX_SLUG or not SLUG.fullmatch(slug):
            message = "not a pack's route — a slug is letters, digits, '.', '_' or '-'"
            return error_response(404, message)
        own = [f"{PACK_SCOPE}{slug}"] + ([HUB_SCOPE] if hub else [])
        return JSONResponse(gate.document(f"/packs/{slug}/mcp", own))

    return [
        Route(WELL_KNOWN, root, methods=["GET"]),
        Route(WELL_KNOWN + "/mcp", mcp, methods=["GET"]),
        Route(WELL_KNOWN + "/packs/{slug}/mcp", pack, methods=["GET"]),
    ]
