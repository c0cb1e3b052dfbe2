"""OAuth 2.1 resource server: bearer access tokens verified against the authorization server.

A JWT access token (RFC 9068) is checked against its issuer's JWKS: `alg` from the pinned list
and matching the key's `kty` (so `none` and HS256-signed-with-the-public-key never verify),
the signature, `iss` exactly one configured issuer (and the key that issuer's own), `aud` this
resource (RFC 8707), `exp`/`nbf`/`iat` within the clock skew. Any other token is asked of the
introspection endpoint (RFC 7662: `active`, `iss`, `aud`, `exp`, `scope`), and the answer kept
briefly (never past `exp`). Either way the result is a `TokenGrant`: the packs its scopes name
(`ep:pack:<slug>`) and the hub (`ep:hub`) — what `auth.decide` weighs beside API keys.

Fail closed: a token that cannot be checked (the JWKS or the introspection endpoint down, slow,
or answering garbage) is refused, with one log line per attempt, and attempts are bounded (a
timeout per request, the keys refetched at most once per ``jwks_refetch_s``, the metadata
and the introspection endpoint asked again after a failure only once its backoff has
passed). The token itself is never logged. Everything here is synchronous; the HTTP layer
runs it on a worker thread.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import math
import re
import threading
import time
import urllib.error
import urllib.request
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

from ep_mcp.config.model import OAuthSettings
from ep_mcp.serve.auth import TokenGrant
from ep_mcp.serve.oauth_fetch import Backoff, Unavailable, fetch_json

logger = logging.getLogger(__name__)

PACK_SCOPE = "ep:pack:"
HUB_SCOPE = "ep:hub"
MAX_CACHED = 10_000  # introspection answers kept
# the key type (and curve) each algorithm's key must have
_KTY = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}
_PRIVATE = ("d", "p", "q", "dp", "dq", "qi", "oth", "k")  # JWK members of private keys
_CRV = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}

Clock = Callable[[], float]
Fetch = Callable[[urllib.request.Request, float], Mapping[str, Any]]


@dataclass(frozen=True)
class Rejected:
    """Why a token was refused (for the log at DEBUG and the 401's description)."""

    reason: str


def metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata lives: RFC 8414 (well-known inserted before the path), then
    OpenID Connect discovery (appended)."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    origin = f"{parts.scheme}://{parts.netloc}"
    return [
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{issuer.rstrip('/')}/.well-known/openid-configuration",
    ]


_SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")  # RFC 6749 §3.3 scope-token


def _scopes(value: object) -> frozenset[str]:
    """The scope tokens of a `scope` string (separated by single spaces, RFC 6749 §3.3) or a
    list of them. A token with any other character is ignored, not split: `str.split()` also
    cut at tabs, no-break spaces and other Unicode spaces, so one odd scope the AS granted
    (`ep:hub\u00a0ep:pack:b`) became two privileges here."""
    if isinstance(value, str):
        items: list[object] = list(value.split(" "))
    elif isinstance(value, list):
        items = value
    else:
        return frozenset()
    return frozenset(s for s in items if isinstance(s, str) and _SCOPE_TOKEN.fullmatch(s))


def grant_of(scopes: frozenset[str], until: float | None = None) -> TokenGrant:
    """What ``scopes`` open: `ep:pack:<slug>` each pack, `ep:hub` the hub (until ``until``)."""
    packs = frozenset(s[len(PACK_SCOPE) :] for s in scopes if s.startswith(PACK_SCOPE))
    return TokenGrant(frozenset(p for p in packs if p), HUB_SCOPE in scopes, until)


def _audience_ok(aud: object, audiences: Sequence[str]) -> bool:
    values = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
    return any(isinstance(v, str) and v in audiences for v in values)


def _b64json(segment: str) -> object:
    padded = segment + "=" * (-len(segment) % 4)
    return json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))


def looks_like_jwt(token: str) -> bool:
    return token.count(".") == 2 and all(token.split("."))


class KeySet:
    """One issuer's signing keys: fetched with a timeout, kept ``ttl`` seconds, refetched for
    an unknown `kid` at most once per ``refetch_s``."""

    def __init__(
        self,
        issuer: str,
        url: Callable[[], str],
        fetch: Fetch,
        settings: OAuthSettings,
        monotonic: Clock,
    ) -> None:
        self.issuer = issuer
        self._url = url
        self._fetch = fetch
        self._settings = settings
        self._monotonic = monotonic
        self._keys: list[Mapping[str, Any]] = []
        self._fetched_at: float | None = None
        self._tried_at: float | None = None
        self._lock = threading.Lock()

    def _refresh(self, now: float) -> None:
        self._tried_at = now
        try:
            url = self._url()
            data = self._fetch(urllib.request.Request(url), self._settings.timeout_s)
        except Unavailable as exc:
            logger.warning(
                "cannot fetch the signing keys of %s: %s — its tokens are refused until it answers",
                self.issuer,
                exc,
            )
            return
        keys = data.get("keys")
        if not isinstance(keys, list):
            logger.warning("the JWKS of %s holds no `keys` — its tokens are refused", self.issuer)
            return
        self._keys = [k for k in keys if isinstance(k, dict)]
        self._fetched_at = now

    def _may_refetch(self, now: float) -> bool:
        return self._tried_at is None or now - self._tried_at >= self._settings.jwks_refetch_s

    def candidates(self, kid: object) -> list[Mapping[str, Any]]:
        """The keys a token's `kid` names (without a `kid`: every key)."""
        with self._lock:
            now = self._monotonic()
            stale = self._fetched_at is None or now - self._fetched_at >= self._settings.jwks_ttl_s
            if stale and self._may_refetch(now):
                self._refresh(now)
            found = self._matching(kid)
            if not found and not stale and self._may_refetch(now):
                self._refresh(now)  # a rotated key: one refetch, then wait the interval
                found = self._matching(kid)
            return found

    def _matching(self, kid: object) -> list[Mapping[str, Any]]:
        if kid is None:
            return list(self._keys)
        return [k for k in self._keys if k.get("kid") == kid]


def _key_fits(jwk: Mapping[str, Any], alg: str) -> bool:
    """The JWK may verify ``alg``: its `kty` (and curve) are that algorithm's, its own `alg`
    (when given) is ``alg`` and its `use` (when given) is signing. A JWK with private members
    is never used: a JWKS publishing a private key is broken (and PyJWT's private key object
    cannot verify: it raised out of the verifier)."""
    if any(member in jwk for member in _PRIVATE):
        return False
    if jwk.get("kty") != _KTY.get(alg[:2]):
        return False
    if alg in _CRV and jwk.get("crv") != _CRV[alg]:
        return False
    if alg == "EdDSA" and jwk.get("crv") not in ("Ed25519", "Ed448"):
        return False
    if "alg" in jwk and jwk["alg"] != alg:
        return False
    return bool(jwk.get("use", "sig") == "sig")


@dataclass
class _Cached:
    answer: Mapping[str, Any]
    until: float
    asked: float  # the wall-clock second it was asked (``now``)


class TokenVerifier:
    """Checks bearer tokens for this resource (see the module doc). ``now`` is the wall clock
    the claims are compared to, ``monotonic`` times the caches; tests inject both."""

    def __init__(
        self,
        settings: OAuthSettings,
        *,
        fetch: Fetch = fetch_json,
        now: Clock = time.time,
        monotonic: Clock = time.monotonic,
    ) -> None:
        self.settings = settings
        self._fetch = fetch
        self._now = now
        self._monotonic = monotonic
        self._metadata: dict[str, Mapping[str, Any]] = {}
        self._metadata_lock = threading.Lock()
        # a dead authorization server is asked once per backoff interval, not per request
        self._metadata_down = {i: (Backoff(monotonic), [""]) for i in settings.issuers}
        self._introspection_down = Backoff(monotonic)
        self.keys = {
            issuer: KeySet(issuer, self._jwks_url(issuer), fetch, settings, monotonic)
            for issuer in settings.issuers
        }
        self._introspected: OrderedDict[bytes, _Cached] = OrderedDict()
        self._cache_lock = threading.Lock()

    # -- discovery ---------------------------------------------------------------------------

    def metadata(self, issuer: str) -> Mapping[str, Any]:
        """The issuer's authorization server metadata, whose `issuer` must be exactly the one
        configured (RFC 8414 §3.3); `Unavailable` otherwise (asked again next time)."""
        with self._metadata_lock:
            if issuer in self._metadata:
                return self._metadata[issuer]
            backoff, last = self._metadata_down[issuer]
            wait = backoff.left()
            if wait:
                raise Unavailable(f"{last[0]} (not asked again for {wait:.0f} s)")
            problems = []
            for url in metadata_urls(issuer):
                try:
                    data = self._fetch(urllib.request.Request(url), self.settings.timeout_s)
                except Unavailable as exc:
                    problems.append(f"{url}: {exc}")
                    continue
                if data.get("issuer") != issuer:
                    problems.append(f"{url}: names issuer {str(data.get('issuer'))[:200]!r}")
                    continue
                self._metadata[issuer] = data
                backoff.succeeded()
                return data
            last[0] = "; ".join(problems)
            backoff.failed()
            raise Unavailable(last[0])

    def _jwks_url(self, issuer: str) -> Callable[[], str]:
        def url() -> str:
            if self.settings.jwks_url is not None:
                return self.settings.jwks_url
            found = self.metadata(issuer).get("jwks_uri")
            if not isinstance(found, str):
                raise Unavailable(f"the metadata of {issuer} names no jwks_uri")
            return found

        return url

    def _introspection_url(self) -> str:
        if self.settings.introspection_endpoint is not None:
            return self.settings.introspection_endpoint
        found = self.metadata(self.settings.issuers[0]).get("introspection_endpoint")
        if not isinstance(found, str):
            raise Unavailable("the issuer's metadata names no introspection_endpoint")
        return found

    # -- verification ------------------------------------------------------------------------

    def verify(self, token: str, audiences: Sequence[str]) -> TokenGrant | Rejected:
        """What ``token`` opens when it is valid for one of ``audiences``, else why not."""
        if looks_like_jwt(token):
            return self._verify_jwt(token, audiences)
        if self.settings.client_id is not None:
            return self._introspect(token, audiences)
        return Rejected("not a JWT, and no introspection endpoint is configured")

    def _times_ok(self, claims: Mapping[str, Any], *, require_exp: bool = True) -> str | None:
        now, skew = self._now(), self.settings.clock_skew_s
        exp, nbf, iat = claims.get("exp"), claims.get("nbf"), claims.get("iat")
        for name, value in (("exp", exp), ("nbf", nbf), ("iat", iat)):
            number = isinstance(value, int | float) and not isinstance(value, bool)
            # NaN and Infinity parse from JSON: NaN compares false (never expired), Infinity
            # never ends
            if value is not None and not (number and math.isfinite(value)):
                return f"`{name}` is not a number"
        if exp is None:
            return "no `exp`" if require_exp else None
        if now > exp + skew:
            return "expired"
        if nbf is not None and now + skew < nbf:
            return "not valid yet (`nbf`)"
        if iat is not None and iat > now + skew:
            return "issued in the future (`iat`)"
        return None

    def _verify_jwt(self, token: str, audiences: Sequence[str]) -> TokenGrant | Rejected:
        import jwt

        head, body, _ = token.split(".")
        try:
            header, unverified = _b64json(head), _b64json(body)
        except (ValueError, UnicodeError, RecursionError):
            return Rejected("malformed JWT")
        if not isinstance(header, dict) or not isinstance(unverified, dict):
            return Rejected("malformed JWT")
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.settings.algorithms:
            return Rejected(f"algorithm {str(alg)[:20]!r} is not allowed")
        issuer = unverified.get("iss")
        keys = self.keys.get(issuer) if isinstance(issuer, str) else None
        if keys is None or not isinstance(issuer, str):
            return Rejected("issuer is not one this server trusts")
        candidates = [k for k in keys.candidates(header.get("kid")) if _key_fits(k, alg)]
        if not candidates:
            return Rejected("no signing key of its issuer fits it (or the keys are unavailable)")
        for jwk in candidates[:8]:
            try:
                key = jwt.PyJWK(dict(jwk), algorithm=alg)
                claims = jwt.decode(
                    token,
                    key=key.key,
                    algorithms=[alg],
                    options={
                        "verify_signature": True,
                        "verify_exp": False,  # checked below against the injected clock
                        "verify_nbf": False,
                        "verify_iat": False,
                        "verify_aud": False,
                        "verify_iss": False,
                    },
                )
            except (jwt.PyJWTError, ValueError, TypeError):
                continue
            return self._claims_grant(claims, issuer, audiences)
        return Rejected("bad signature")

    def _claims_grant(
        self, claims: Mapping[str, Any], issuer: str, audiences: Sequence[str]
    ) -> TokenGrant | Rejected:
        if claims.get("iss") != issuer:
            return Rejected("issuer changed")
        if not _audience_ok(claims.get("aud"), audiences):
            return Rejected("not issued for this resource (`aud`)")
        problem = self._times_ok(claims)
        if problem:
            return Rejected(problem)
        until = float(claims["exp"]) + self.settings.clock_skew_s
        return grant_of(_scopes(claims.get(self.settings.scope_claim)), until)

    def _introspect(self, token: str, audiences: Sequence[str]) -> TokenGrant | Rejected:
        found = self._answer(token)
        if found is None:
            return Rejected("the introspection endpoint did not answer")
        return self._introspection_grant(*found, audiences)

    def _answer(self, token: str) -> tuple[Mapping[str, Any], float] | None:
        """The introspection answer for ``token`` and when it was asked: asked now, or reused
        for at most ``introspection_ttl_s`` and never past the token's `exp` (None: no
        answer)."""
        key = hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()
        now = self._monotonic()
        with self._cache_lock:
            cached = self._introspected.get(key)
            if cached is not None and now < cached.until:
                return cached.answer, cached.asked
        wait = self._introspection_down.left()
        if wait:
            logger.debug("introspection failed lately: asked again in %.0f s", wait)
            return None
        try:
            asked, answer = self._now(), self._ask(token)
        except Unavailable as exc:
            wait = self._introspection_down.failed()
            logger.warning(
                "cannot introspect a token: %s — tokens are refused, asked again in %.0f s",
                exc,
                wait,
            )
            return None
        self._introspection_down.succeeded()
        ttl = self.settings.introspection_ttl_s
        exp = answer.get("exp")
        if isinstance(exp, int | float) and not isinstance(exp, bool):
            ttl = min(ttl, max(0.0, float(exp) - self._now()))
        with self._cache_lock:
            self._introspected[key] = _Cached(answer, now + ttl, asked)
            while len(self._introspected) > MAX_CACHED:
                self._introspected.popitem(last=False)
        return answer, asked

    def _ask(self, token: str) -> Mapping[str, Any]:
        s = self.settings
        credentials = f"{s.client_id}:{s.client_secret or ''}".encode()
        request = urllib.request.Request(
            self._introspection_url(),
            data=urlencode({"token": token, "token_type_hint": "access_token"}).encode(),
            headers={
                "Authorization": "Basic " + base64.b64encode(credentials).decode("ascii"),
                "Content-Type": "application/x-www-form-urlencoded",
                "Accept": "application/json",
            },
            method="POST",
        )
        return self._fetch(request, s.timeout_s)

    def _introspection_grant(
        self, answer: Mapping[str, Any], asked: float, audiences: Sequence[str]
    ) -> TokenGrant | Rejected:
        if answer.get("active") is not True:
            return Rejected("inactive (revoked, expired or unknown)")
        iss = answer.get("iss")
        if iss is not None and iss not in self.settings.issuers:
            return Rejected("issuer is not one this server trusts")
        if not _audience_ok(answer.get("aud"), audiences):
            return Rejected("not issued for this resource (`aud`)")
        problem = self._times_ok(answer)
        if problem:
            return Rejected(problem)
        # trusted no longer than the answer may be reused: a revocation is heard at the next ask
        until = asked + self.settings.introspection_ttl_s
        exp = answer.get("exp")
        if isinstance(exp, int | float):
            until = min(until, float(exp) + self.settings.clock_skew_s)
        scopes = _scopes(answer.get("scope", answer.get(self.settings.scope_claim)))
        return grant_of(scopes, until)
