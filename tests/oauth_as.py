"""A small OAuth 2.1 authorization server built on Authlib, served by a real uvicorn on
127.0.0.1 — the authorization server of the OAuth attack battery (tests/serve/test_oauth.py),
whose key also signs the forged tokens; Debian's glewlwyd is the other (tests/glewlwyd_as.py).

What is Authlib's: the client-credentials grant and client authentication
(`AuthorizationServer`, `ClientCredentialsGrant`), RFC 9068 JWT access tokens
(`JWTBearerTokenGenerator`), RFC 7662 introspection and RFC 7009 revocation endpoints; the keys
are joserfc's (Authlib's JOSE successor). What is ours: the in-memory client and token stores,
the Starlette glue, the RFC 8414 metadata and the RFC 8707 `resource` → `aud` rule. Two
clients: `jwt-client` gets JWT access tokens, `opaque-client` opaque ones (for introspection);
`ep-mcp` may only introspect.
"""

from __future__ import annotations

import secrets
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from authlib.oauth2.rfc6749 import (
    AuthorizationServer,
    ClientMixin,
    JsonRequest,
    OAuth2Request,
    TokenMixin,
)
from authlib.oauth2.rfc6749.grants import ClientCredentialsGrant
from authlib.oauth2.rfc6749.requests import BasicOAuth2Payload
from authlib.oauth2.rfc6750 import BearerTokenGenerator
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc7662 import IntrospectionEndpoint
from authlib.oauth2.rfc9068 import JWTBearerTokenGenerator
from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

ALL_SCOPES = ("ep:pack:alpha", "ep:pack:beta", "ep:hub")


@dataclass
class Client(ClientMixin):  # type: ignore[misc]
    client_id: str
    secret: str
    scopes: tuple[str, ...]
    grants: tuple[str, ...] = ("client_credentials",)

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> None:
        return None

    def get_allowed_scope(self, scope: str | None) -> str:
        asked = (scope or "").split()
        return " ".join(s for s in asked if s in self.scopes)

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return False

    def check_client_secret(self, client_secret: str) -> bool:
        return secrets.compare_digest(client_secret, self.secret)

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method in ("client_secret_basic", "client_secret_post")

    def check_response_type(self, response_type: str) -> bool:
        return False

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in self.grants


@dataclass
class Token(TokenMixin):  # type: ignore[misc]
    access_token: str
    client_id: str
    scope: str
    issued_at: int
    expires_in: int
    audience: str
    revoked: bool = False

    def check_client(self, client: Client) -> bool:
        return client.client_id == self.client_id

    def get_scope(self) -> str:
        return self.scope

    def get_expires_in(self) -> int:
        return self.expires_in

    def is_expired(self) -> bool:
        return time.time() >= self.issued_at + self.expires_in

    def is_revoked(self) -> bool:
        return self.revoked


@dataclass
class Store:
    clients: dict[str, Client] = field(default_factory=dict)
    tokens: dict[str, Token] = field(default_factory=dict)


class StarletteOAuth2Request(OAuth2Request):  # type: ignore[misc]
    def __init__(self, method: str, url: str, headers: Any, form: dict[str, str]) -> None:
        super().__init__(method=method, uri=url, headers=headers)
        self._form = form
        self.payload = BasicOAuth2Payload(form)

    @property
    def form(self) -> dict[str, str]:
        return self._form

    @property
    def args(self) -> dict[str, str]:
        return {}


class Server(AuthorizationServer):  # type: ignore[misc]
    def __init__(self, store: Store) -> None:
        super().__init__(scopes_supported=list(ALL_SCOPES))
        self.store = store

    def query_client(self, client_id: str) -> Client | None:
        return self.store.clients.get(client_id)

    def save_token(self, token: dict[str, Any], request: Any) -> None:
        self.store.tokens[token["access_token"]] = Token(
            token["access_token"],
            request.client.client_id,
            token.get("scope", ""),
            int(time.time()),
            int(token.get("expires_in", 3600)),
            request.resource_asked,
        )

    def create_oauth2_request(self, request: Any) -> OAuth2Request:
        return request

    def create_json_request(self, request: Any) -> JsonRequest:
        raise NotImplementedError

    def handle_response(self, status: int, body: Any, headers: Any) -> Response:
        return JSONResponse(body, status_code=status, headers=dict(headers))

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        return None


class AuthServer:
    """The authorization server, its keys, and helpers the attack tests sign with."""

    def __init__(self, resource: str = "") -> None:
        self.base = ""
        self.default_audience = resource
        self.key = RSAKey.generate_key(2048, parameters={"kid": "k1"}, private=True)
        self.store = Store()
        self.secrets = {
            "jwt-client": secrets.token_urlsafe(16),
            "opaque-client": secrets.token_urlsafe(16),
            "ep-mcp": secrets.token_urlsafe(16),
        }
        for name in ("jwt-client", "opaque-client"):
            self.store.clients[name] = Client(name, self.secrets[name], ALL_SCOPES)
        self.store.clients["ep-mcp"] = Client("ep-mcp", self.secrets["ep-mcp"], (), grants=())
        self.jwks_requests = 0

    @property
    def issuer(self) -> str:
        return self.base

    def public_jwks(self) -> dict[str, Any]:
        jwk = self.key.as_dict(private=False)
        return {"keys": [{**jwk, "use": "sig", "alg": "RS256", "kid": "k1"}]}

    def sign(self, claims: dict[str, Any], header: dict[str, Any] | None = None) -> str:
        """A JWT signed with this server's private key (for forged-claim tests)."""
        head = header or {"alg": "RS256", "kid": "k1", "typ": "at+jwt"}
        return jwt.encode(head, claims, self.key, algorithms=[head["alg"]])

    def claims(self, scope: str, **override: Any) -> dict[str, Any]:
        now = int(time.time())
        base = {
            "iss": self.issuer,
            "aud": self.default_audience,
            "sub": "jwt-client",
            "client_id": "jwt-client",
            "scope": scope,
            "iat": now,
            "exp": now + 3600,
            "jti": secrets.token_hex(8),
        }
        base.update(override)
        return {k: v for k, v in base.items() if v is not None}

    def app(self) -> Starlette:
        server = Server(self.store)
        outer = self

        class JWTTokens(JWTBearerTokenGenerator):  # type: ignore[misc]
            def get_jwks(self) -> KeySet:
                return KeySet([outer.key])

            def get_audiences(self, client: Any, user: Any, scope: Any) -> str:
                return outer._asking  # the RFC 8707 resource the request named

        class Introspection(IntrospectionEndpoint):  # type: ignore[misc]
            def query_token(self, token: str, hint: str | None) -> Token | None:
                return outer.store.tokens.get(token)

            def check_permission(self, token: Token, client: Client, request: Any) -> bool:
                return client.client_id == "ep-mcp"

            def introspect_token(self, token: Token) -> dict[str, Any]:
                return {
                    "active": True,
                    "client_id": token.client_id,
                    "token_type": "Bearer",
                    "scope": token.scope,
                    "aud": token.audience,
                    "iss": outer.issuer,
                    "exp": token.issued_at + token.expires_in,
                    "iat": token.issued_at,
                }

        class Revocation(RevocationEndpoint):  # type: ignore[misc]
            def query_token(self, token: str, hint: str | None) -> Token | None:
                return outer.store.tokens.get(token)

            def revoke_token(self, token: Token, request: Any) -> None:
                token.revoked = True

        jwt_tokens = JWTTokens(issuer="", alg="RS256")
        opaque = BearerTokenGenerator(lambda *a, **k: secrets.token_urlsafe(32))
        server.register_grant(ClientCredentialsGrant)
        server.register_endpoint(Introspection)
        server.register_endpoint(Revocation)

        def generate(
            grant_type: str, client: Client, user: Any = None, scope: Any = None, **kw: Any
        ) -> dict[str, Any]:
            jwt_tokens.issuer = outer.issuer
            gen = jwt_tokens if client.client_id == "jwt-client" else opaque
            return gen(grant_type=grant_type, client=client, user=user, scope=scope, **kw)  # type: ignore[no-any-return]

        server.generate_token = generate

        async def oauth_request(request: Request) -> StarletteOAuth2Request:
            form = {k: str(v) for k, v in (await request.form()).items()}
            req = StarletteOAuth2Request(request.method, str(request.url), request.headers, form)
            req.resource_asked = form.get("resource") or outer.default_audience
            outer._asking = req.resource_asked
            return req

        async def token(request: Request) -> Response:
            return server.create_token_response(await oauth_request(request))  # type: ignore[no-any-return]

        async def introspect(request: Request) -> Response:
            return server.create_endpoint_response("introspection", await oauth_request(request))  # type: ignore[no-any-return]

        async def revoke(request: Request) -> Response:
            return server.create_endpoint_response("revocation", await oauth_request(request))  # type: ignore[no-any-return]

        async def jwks(request: Request) -> Response:
            outer.jwks_requests += 1
            return JSONResponse(outer.public_jwks())

        async def metadata(request: Request) -> Response:
            return JSONResponse(
                {
                    "issuer": outer.issuer,
                    # required by the SDK's metadata model; no grant here uses it (no route)
                    "authorization_endpoint": f"{outer.base}/authorize",
                    "token_endpoint": f"{outer.base}/token",
                    "jwks_uri": f"{outer.base}/jwks",
                    "introspection_endpoint": f"{outer.base}/introspect",
                    "revocation_endpoint": f"{outer.base}/revoke",
                    "grant_types_supported": ["client_credentials"],
                    "token_endpoint_auth_methods_supported": [
                        "client_secret_basic",
                        "client_secret_post",
                    ],
                    "scopes_supported": list(ALL_SCOPES),
                    "response_types_supported": ["code"],
                }
            )

        return Starlette(
            routes=[
                Route("/.well-known/oauth-authorization-server", metadata, methods=["GET"]),
                Route("/jwks", jwks, methods=["GET"]),
                Route("/token", token, methods=["POST"]),
                Route("/introspect", introspect, methods=["POST"]),
                Route("/revoke", revoke, methods=["POST"]),
            ]
        )

    _asking = ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(app: Any, port: int | None = None) -> Iterator[str]:
    """``app`` on a real uvicorn on 127.0.0.1 in a thread; its base URL while the block runs."""
    port = port or free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(2000):  # bounded poll: uvicorn says when it listens
        if server.started:
            break
        if not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    else:
        raise RuntimeError("uvicorn did not start")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
