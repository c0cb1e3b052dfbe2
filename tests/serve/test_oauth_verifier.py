"""The token verifier on its own: an injected clock for the skew rules, a fake key server
that counts its fetches, and what a token's scopes open in `auth.decide`."""

from __future__ import annotations

import dataclasses
import sys
import urllib.request
from collections.abc import Mapping
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from ep_mcp.config.load import load_settings
from ep_mcp.config.model import OAuthSettings
from ep_mcp.errors import ConfigError
from ep_mcp.serve import auth
from ep_mcp.serve.oauth import Rejected, TokenVerifier, Unavailable

ISSUER = "https://auth.example.com"
RESOURCE = "https://kb.example.com"
T0 = 1_900_000_000.0  # the injected "now" of these tests


class KeyServer:
    """A fake of the authorization server's JWKS URL: the keys it serves, or down."""

    def __init__(self) -> None:
        self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = "k1"
        self.down = False
        self.fetches = 0

    def jwks(self) -> dict[str, Any]:
        jwk = jwt.algorithms.RSAAlgorithm.to_jwk(self.private.public_key(), as_dict=True)
        return {"keys": [{**jwk, "kid": self.kid, "use": "sig", "alg": "RS256"}]}

    def fetch(self, request: urllib.request.Request, timeout: float) -> Mapping[str, Any]:
        self.fetches += 1
        if self.down:
            raise Unavailable("connection refused")
        return self.jwks()

    def sign(self, claims: dict[str, Any], kid: str | None = None) -> str:
        return jwt.encode(claims, self.private, algorithm="RS256", headers={"kid": kid or self.kid})


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def claims(**override: Any) -> dict[str, Any]:
    base = {"iss": ISSUER, "aud": RESOURCE, "scope": "ep:pack:alpha", "iat": T0, "exp": T0 + 600}
    base.update(override)
    return {k: v for k, v in base.items() if v is not None}


def verifier(keys: KeyServer, clock: Clock, **settings: Any) -> TokenVerifier:
    s = OAuthSettings(issuers=(ISSUER,), resource=RESOURCE, jwks_url=f"{ISSUER}/jwks", **settings)
    return TokenVerifier(s, fetch=keys.fetch, now=clock, monotonic=clock)


def test_expiry_and_not_before_allow_the_clock_skew_and_no_more() -> None:
    keys, clock = KeyServer(), Clock(T0)
    v = verifier(keys, clock, clock_skew_s=30)
    token = keys.sign(claims(exp=T0 + 100, nbf=T0 + 50))
    for now, ok in [(T0 + 19, False), (T0 + 21, True), (T0 + 129, True), (T0 + 131, False)]:
        clock.now = now
        result = v.verify(token, [RESOURCE])
        assert isinstance(result, auth.TokenGrant) is ok, (now, result)
    clock.now = T0
    future = keys.sign(claims(iat=T0 + 31))
    assert v.verify(future, [RESOURCE]) == Rejected("issued in the future (`iat`)")
    assert isinstance(v.verify(keys.sign(claims(exp=None)), [RESOURCE]), Rejected)


def test_audience_issuer_and_scopes_decide_what_a_token_opens() -> None:
    keys, clock = KeyServer(), Clock(T0)
    v = verifier(keys, clock)
    grant = v.verify(keys.sign(claims(scope="ep:pack:alpha ep:hub other")), [RESOURCE])
    assert grant == auth.TokenGrant(frozenset({"alpha"}), True)
    as_list = v.verify(
        keys.sign(claims(aud=["x", RESOURCE], scope=None, scp=["ep:pack:b"])), [RESOURCE]
    )
    assert as_list == auth.TokenGrant()  # the scope claim is `scope` unless configured
    v2 = verifier(keys, clock, scope_claim="scp")
    assert v2.verify(keys.sign(claims(scp=["ep:pack:b"])), [RESOURCE]) == auth.TokenGrant(
        frozenset({"b"}), False
    )
    assert isinstance(v.verify(keys.sign(claims(aud="https://other")), [RESOURCE]), Rejected)
    assert isinstance(v.verify(keys.sign(claims(iss=ISSUER + "/")), [RESOURCE]), Rejected)


def test_an_algorithm_must_be_pinned_and_match_the_keys_type() -> None:
    keys, clock = KeyServer(), Clock(T0)
    v = verifier(keys, clock, algorithms=("ES256",))
    assert v.verify(keys.sign(claims()), [RESOURCE]) == Rejected("algorithm 'RS256' is not allowed")
    # ES256 allowed, but the issuer's key is RSA: no key fits, the signature is never tried
    ec_key = ec.generate_private_key(ec.SECP256R1())
    token = jwt.encode(claims(), ec_key, algorithm="ES256", headers={"kid": keys.kid})
    assert isinstance(v.verify(token, [RESOURCE]), Rejected)
    hs = jwt.encode(claims(), "secret-of-32-bytes-at-least-0123456789", algorithm="HS256")
    assert verifier(keys, clock).verify(hs, [RESOURCE]) == Rejected(
        "algorithm 'HS256' is not allowed"
    )


def test_an_unknown_kid_refetches_the_keys_at_most_once_per_interval() -> None:
    keys, clock = KeyServer(), Clock(T0)
    v = verifier(keys, clock, jwks_refetch_s=30, jwks_ttl_s=3600)
    assert isinstance(v.verify(keys.sign(claims()), [RESOURCE]), auth.TokenGrant)
    assert keys.fetches == 1
    for _ in range(20):  # a flood of tokens naming a kid nobody has
        assert isinstance(v.verify(keys.sign(claims(), kid="nope"), [RESOURCE]), Rejected)
    assert keys.fetches == 1  # the first fetch was < 30 s ago: no refetch
    clock.now += 31
    keys.kid = "k2"  # the server rotated its key
    assert isinstance(v.verify(keys.sign(claims(), kid="k2"), [RESOURCE]), auth.TokenGrant)
    assert keys.fetches == 2


def test_keys_that_are_down_refuse_tokens_and_are_asked_again_only_after_the_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    keys, clock = KeyServer(), Clock(T0)
    keys.down = True
    v = verifier(keys, clock, jwks_refetch_s=30)
    token = keys.sign(claims())
    for _ in range(5):
        assert isinstance(v.verify(token, [RESOURCE]), Rejected)
    assert keys.fetches == 1
    assert len([r for r in caplog.records if "cannot fetch the signing keys" in r.message]) == 1
    assert token not in caplog.text
    keys.down = False
    clock.now += 31
    assert isinstance(v.verify(token, [RESOURCE]), auth.TokenGrant)


def test_a_token_grant_opens_only_its_packs_and_the_hub_only_with_ep_hub() -> None:
    ring = dataclasses.replace(auth.KeyRing.build({"alpha": ["sk-a"]}), oauth=True)
    served = ["alpha", "beta", "gamma"]
    alpha = auth.TokenGrant(frozenset({"alpha"}), False)
    d = auth.decide(ring, served, None, alpha, hub=True)
    assert d.access == auth.Access(frozenset({"alpha"}), False)
    d = auth.decide(ring, served, "beta", alpha, hub=True)
    assert (d.status, d.error, d.scope) == (403, "insufficient_scope", "ep:pack:beta")
    hub = auth.TokenGrant(frozenset(), True)
    assert auth.decide(ring, served, None, hub, hub=True).access == auth.Access(frozenset(), True)
    assert auth.decide(ring, served, None, hub, hub=False).status == 403
    assert auth.decide(ring, served, None, auth.TokenGrant(), hub=True).status == 403
    # with OAuth on no pack is open: no credential sees nothing
    assert auth.decide(ring, served, None, auth.Credential.NONE, hub=True).status == 401
    assert auth.decide(ring, served, "beta", b"sk-a", hub=True).status == 403  # a key: its pack


def _load(section: dict[str, Any]) -> None:
    load_settings(data={"server": {"auth": section}})


BASE = {"issuers": [ISSUER], "resource": RESOURCE}


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"issuers": [ISSUER]}, "server.auth.resource: name this server's public origin"),
        (
            {**BASE, "resource": f"{RESOURCE}/mcp"},
            "server.auth.resource: must be this server's public origin",
        ),
        (
            {**BASE, "algorithms": ["HS256"]},
            "server.auth.algorithms: 'HS256' is not allowed (never none, never a shared-secret",
        ),
        ({**BASE, "algorithms": ["none"]}, "server.auth.algorithms: 'none' is not allowed"),
        (
            {**BASE, "issuers": ["http://auth.example.com"]},
            "server.auth.issuers[0]: must use https",
        ),
        (
            {**BASE, "client_id": "ep"},
            "server.auth.client_id: the introspection client needs its secret",
        ),
        ({"resource": RESOURCE}, "server.auth.resource: set but server.auth.issuers"),
        ({**BASE, "clock_skew_s": 3600}, "server.auth.clock_skew_s: must be between 0 and 300"),
        (
            {**BASE, "introspection_ttl_s": 3600},
            "server.auth.introspection_ttl_s: at most 300 seconds (a revoked token works",
        ),
    ],
)
def test_server_auth_mistakes_are_one_line_errors_naming_the_key(
    section: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError) as err:
        _load(section)
    assert message in str(err.value)


def test_server_auth_without_pyjwt_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jwt", None)  # import jwt → ImportError
    with pytest.raises(ConfigError, match=r"pip install 'ep-mcp\[oauth\]'"):
        _load(BASE)
    load_settings(data={})  # off: nothing needs it


class Introspector:
    """A fake introspection endpoint: what it answers per token, and how often it was asked."""

    def __init__(self) -> None:
        self.answers: dict[str, dict[str, Any]] = {}
        self.asked = 0
        self.down = False

    def fetch(self, request: urllib.request.Request, timeout: float) -> Mapping[str, Any]:
        self.asked += 1
        if self.down:
            raise Unavailable("timed out")
        assert request.get_header("Authorization", "").startswith("Basic ")
        form = dict(p.split("=", 1) for p in (request.data or b"").decode().split("&"))
        return self.answers.get(form["token"], {"active": False})


def introspecting(endpoint: Introspector, clock: Clock, **settings: Any) -> TokenVerifier:
    s = OAuthSettings(
        issuers=(ISSUER,),
        resource=RESOURCE,
        introspection_endpoint=f"{ISSUER}/introspect",
        client_id="ep-mcp",
        client_secret="s",
        **settings,
    )
    return TokenVerifier(s, fetch=endpoint.fetch, now=clock, monotonic=clock)


def test_introspection_answers_are_reused_briefly_and_never_past_exp() -> None:
    endpoint, clock = Introspector(), Clock(T0)
    v = introspecting(endpoint, clock, introspection_ttl_s=60)
    endpoint.answers["opaque1"] = {
        "active": True,
        "iss": ISSUER,
        "aud": RESOURCE,
        "exp": T0 + 100,
        "scope": "ep:pack:a",
    }
    grant = auth.TokenGrant(frozenset({"a"}), False)
    assert v.verify("opaque1", [RESOURCE]) == grant
    assert v.verify("opaque1", [RESOURCE]) == grant and endpoint.asked == 1
    endpoint.answers["opaque1"] = {"active": False}  # revoked at the server
    clock.now = T0 + 59
    assert v.verify("opaque1", [RESOURCE]) == grant  # within the TTL: the kept answer
    clock.now = T0 + 61
    assert isinstance(v.verify("opaque1", [RESOURCE]), Rejected) and endpoint.asked == 2
    # a token expiring in 10 s is kept 10 s, not 60
    endpoint.answers["opaque2"] = {
        "active": True,
        "iss": ISSUER,
        "aud": RESOURCE,
        "exp": clock.now + 10,
        "scope": "",
    }
    v.verify("opaque2", [RESOURCE])
    assert endpoint.asked == 3
    clock.now += 11
    v.verify("opaque2", [RESOURCE])
    assert endpoint.asked == 4  # asked again: the kept answer ended at its `exp`
    clock.now += 30  # past exp + the clock skew
    endpoint.answers.pop("opaque2")
    assert isinstance(v.verify("opaque2", [RESOURCE]), Rejected)


def test_introspection_by_default_hears_of_a_revocation_within_30_seconds() -> None:
    endpoint, clock = Introspector(), Clock(T0)
    v = introspecting(endpoint, clock)
    endpoint.answers["t"] = {"active": True, "aud": RESOURCE, "exp": T0 + 3600, "scope": ""}
    assert not isinstance(v.verify("t", [RESOURCE]), Rejected)
    endpoint.answers["t"] = {"active": False}  # revoked
    clock.now = T0 + 30
    assert isinstance(v.verify("t", [RESOURCE]), Rejected) and endpoint.asked == 2


@pytest.mark.parametrize("ttl", [0, 1, 30, 300])
@pytest.mark.parametrize("left", [-10, 0, 0.5, 5, 29, 31, 299, 10_000])
def test_a_kept_introspection_answer_never_outlives_the_tokens_exp(ttl: float, left: float) -> None:
    endpoint, clock = Introspector(), Clock(T0)
    v = introspecting(endpoint, clock, introspection_ttl_s=ttl)
    answer = {"active": True, "aud": RESOURCE, "exp": T0 + left, "scope": "ep:pack:a"}
    endpoint.answers["t"] = answer
    first = v.verify("t", [RESOURCE])
    if isinstance(first, auth.TokenGrant):  # a grant ends with the answer, or exp + the skew
        assert first.until is not None and first.until <= T0 + min(ttl, left + 30)
    last = T0  # when the kept answer was asked
    for step in (0.25, 0.5, 1, 5, 29, 30, 31, 299, 300, 301, 10_001):
        clock.now = T0 + step
        asked = endpoint.asked
        v.verify("t", [RESOURCE])
        kept_until = last + min(ttl, max(0.0, T0 + left - last))
        if clock.now >= kept_until:  # past the TTL or exp: asked again, never the kept answer
            assert endpoint.asked == asked + 1, step
            last = clock.now
        else:
            assert endpoint.asked == asked and clock.now < T0 + left, step


@pytest.mark.parametrize(
    "answer",
    [
        {"active": "true", "aud": RESOURCE, "exp": T0 + 100},  # `active` must be the boolean
        {"active": True, "aud": "https://other", "exp": T0 + 100},
        {"active": True, "aud": RESOURCE, "exp": T0 + 100, "iss": "https://evil"},
        {"active": True, "aud": RESOURCE},  # no exp
        {"active": True, "exp": T0 + 100},  # no aud
    ],
)
def test_an_introspection_answer_must_be_active_for_us_from_our_issuer_and_expiring(
    answer: dict[str, Any],
) -> None:
    endpoint, clock = Introspector(), Clock(T0)
    endpoint.answers["t"] = {**answer, "scope": "ep:pack:a"}
    assert isinstance(introspecting(endpoint, clock).verify("t", [RESOURCE]), Rejected)


def test_an_introspection_endpoint_that_is_down_refuses_the_token_with_one_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    endpoint, clock = Introspector(), Clock(T0)
    endpoint.down = True
    assert isinstance(introspecting(endpoint, clock).verify("t0ken", [RESOURCE]), Rejected)
    lines = [r for r in caplog.records if "cannot introspect" in r.message]
    assert len(lines) == 1 and "t0ken" not in caplog.text


def test_discovered_keys_come_only_from_metadata_naming_exactly_our_issuer() -> None:
    keys, clock = KeyServer(), Clock(T0)
    served: dict[str, dict[str, Any]] = {}

    def fetch(request: urllib.request.Request, timeout: float) -> Mapping[str, Any]:
        url = request.full_url
        if url in served:
            return served[url]
        if url == "https://auth.example.com/keys":
            return keys.jwks()
        raise Unavailable("HTTP 404")

    settings = OAuthSettings(issuers=(ISSUER,), resource=RESOURCE, jwks_refetch_s=0)
    token = keys.sign(claims())
    served[f"{ISSUER}/.well-known/oauth-authorization-server"] = {
        "issuer": ISSUER + "/",  # not exactly ours
        "jwks_uri": "https://auth.example.com/keys",
    }
    v = TokenVerifier(settings, fetch=fetch, now=clock, monotonic=clock)
    assert isinstance(v.verify(token, [RESOURCE]), Rejected)
    served[f"{ISSUER}/.well-known/openid-configuration"] = {
        "issuer": ISSUER,
        "jwks_uri": "https://auth.example.com/keys",
    }
    clock.now += 1
    assert isinstance(v.verify(token, [RESOURCE]), auth.TokenGrant)


class DeadServer:
    """A fake authorization server that is down: every fetch counted, by URL, and refused."""

    def __init__(self) -> None:
        self.fetched: list[str] = []
        self.up: dict[str, Mapping[str, Any]] = {}  # URL -> its answer once it is back

    def fetch(self, request: urllib.request.Request, timeout: float) -> Mapping[str, Any]:
        self.fetched.append(request.full_url)
        if request.full_url in self.up:
            return self.up[request.full_url]
        raise Unavailable("connection refused")


def _a_request_every_tenth_of_a_second_for(
    v: TokenVerifier, clock: Clock, seconds: int, token: Any
) -> None:
    for i in range(seconds * 10):
        clock.now = T0 + i / 10
        assert isinstance(v.verify(token(i), [RESOURCE]), Rejected)


@pytest.mark.parametrize("configured", [True, False])
def test_a_dead_introspection_endpoint_is_asked_once_per_backoff_interval_not_per_request(
    configured: bool, caplog: pytest.LogCaptureFixture
) -> None:
    server, clock = DeadServer(), Clock(T0)
    endpoint = {"introspection_endpoint": f"{ISSUER}/introspect"} if configured else {}
    s = OAuthSettings(
        issuers=(ISSUER,), resource=RESOURCE, client_id="ep-mcp", client_secret="s", **endpoint
    )
    v = TokenVerifier(s, fetch=server.fetch, now=clock, monotonic=clock)
    _a_request_every_tenth_of_a_second_for(v, clock, 60, lambda i: f"opaque-{i}")
    # 600 requests, each with a new token: attempts at 0, 1, 3, 7, 15, 31 s (doubling to 30 s)
    per_attempt = 1 if configured else 2  # discovery tries RFC 8414's URL, then OIDC's
    assert len(server.fetched) == 6 * per_attempt, server.fetched
    assert len([r for r in caplog.records if r.levelname == "WARNING"]) <= 6
    # back up: the next attempt after the wait is heard, and resets the backoff
    metadata = {"issuer": ISSUER, "introspection_endpoint": f"{ISSUER}/introspect"}
    server.up = {f"{ISSUER}/.well-known/oauth-authorization-server": metadata}
    server.up[f"{ISSUER}/introspect"] = {"active": True, "aud": RESOURCE, "exp": T0 + 999}
    clock.now = T0 + 61
    assert not isinstance(v.verify("opaque-back", [RESOURCE]), Rejected)


def test_a_dead_key_server_is_asked_once_per_refetch_interval_not_per_request() -> None:
    server, clock = DeadServer(), Clock(T0)
    v = TokenVerifier(
        OAuthSettings(issuers=(ISSUER,), resource=RESOURCE),
        fetch=server.fetch,
        now=clock,
        monotonic=clock,
    )
    keys = KeyServer()
    _a_request_every_tenth_of_a_second_for(v, clock, 60, lambda i: keys.sign(claims(n=i)))
    # discovery (two URLs), at 0 and 30 s (`jwks_refetch_s`)
    assert len(server.fetched) == 4, server.fetched
