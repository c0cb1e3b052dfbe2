"""Hostile keys and scopes (attack pass).

A JWKS that publishes private key members: PyJWT builds a private key from such a JWK, whose
object cannot verify, and the AttributeError went out of the verifier (a 500 where a refusal
belongs). Such keys are now never used: the token is `Rejected`.

A JWT whose `exp` is NaN (JSON as Python reads it): every comparison with NaN is false, so it
never expired; `exp` Infinity never ends either. Neither is a NumericDate: refused.

A scope string split at anything but a space: `str.split()` cut one odd scope token the
authorization server granted (`ep:hub<NBSP>ep:pack:b`) into two privileges. Scope tokens are
separated by spaces and made of RFC 6749's characters; any other token opens nothing."""

from __future__ import annotations

import urllib.request
from collections.abc import Mapping
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from ep_mcp.config.model import OAuthSettings
from ep_mcp.serve.oauth import Rejected, TokenVerifier

ISSUER, RESOURCE, T0 = "https://auth.example.com", "https://kb.example.com", 1_900_000_000.0
PRIVATE = rsa.generate_private_key(public_exponent=65537, key_size=2048)
FULL = jwt.algorithms.RSAAlgorithm.to_jwk(PRIVATE, as_dict=True)
PUBLIC = {k: FULL[k] for k in ("kty", "n", "e")}


def verifier(jwks: list[dict[str, Any]]) -> TokenVerifier:
    def fetch(request: urllib.request.Request, timeout: float) -> Mapping[str, Any]:
        return {"keys": jwks}

    settings = OAuthSettings(issuers=(ISSUER,), resource=RESOURCE, jwks_url=f"{ISSUER}/jwks")
    return TokenVerifier(settings, fetch=fetch, now=lambda: T0, monotonic=lambda: T0)


def token(scope: object = "ep:pack:a", **override: object) -> str:
    claims = {"iss": ISSUER, "aud": RESOURCE, "scope": scope, "exp": T0 + 600, **override}
    return jwt.encode(claims, PRIVATE, algorithm="RS256", headers={"kid": "k1"})


@pytest.mark.parametrize(
    "jwk",
    [
        {**FULL, "kid": "k1"},  # the whole private key
        {**PUBLIC, "kid": "k1", "d": FULL["d"]},  # only its private exponent
    ],
)
def test_a_private_jwk_is_never_used(jwk: dict[str, Any]) -> None:
    result = verifier([jwk]).verify(token(), [RESOURCE])
    assert isinstance(result, Rejected), result


def test_the_public_half_beside_it_still_verifies() -> None:
    jwks = [{**FULL, "kid": "k1"}, {**PUBLIC, "kid": "k1"}]
    result = verifier(jwks).verify(token(), [RESOURCE])
    assert not isinstance(result, Rejected), result


@pytest.mark.parametrize(
    "scope",
    [
        "ep:hub\u00a0ep:pack:b",  # a no-break space
        "ep:hub\tep:pack:b",
        "ep:hub\nep:pack:b",
        "ep:hub\x1cep:pack:b",  # str.split() splits at the file separator too
        "ep:hub\u3000ep:pack:b",  # an ideographic space
        "ep:hub\u2028ep:pack:b",
    ],
)
def test_a_scope_is_split_at_spaces_only(scope: object) -> None:
    result = verifier([{**PUBLIC, "kid": "k1"}]).verify(token(scope), [RESOURCE])
    assert not isinstance(result, Rejected), result
    assert result.packs == frozenset() and not result.hub, result


NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(
    ("claim", "value"),
    [("exp", NAN), ("exp", INF), ("nbf", NAN), ("nbf", -INF), ("iat", NAN), ("iat", -INF)],
)
def test_a_time_claim_that_is_not_finite_is_refused(claim: str, value: float) -> None:
    result = verifier([{**PUBLIC, "kid": "k1"}]).verify(token(**{claim: value}), [RESOURCE])
    assert isinstance(result, Rejected), result
