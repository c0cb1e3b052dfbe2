"""A JWKS that publishes private key members (attack pass): PyJWT builds a private key from
such a JWK, whose object cannot verify, and the AttributeError went out of the verifier (a 500
where a refusal belongs). Such keys are now never used: the token is `Rejected`."""

from __future__ import annotations

import urllib.request
from collections.abc import Mapping
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from ep_mcp.config import OAuthSettings
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


def token() -> str:
    claims = {"iss": ISSUER, "aud": RESOURCE, "scope": "ep:pack:a", "exp": T0 + 600}
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
