"""Who may see what: per-pack API keys, the skills hub's keys, and Host/Origin allow-lists.

Pure checks the HTTP layer calls. Keys are kept only as SHA-256 digests and compared with
`hmac.compare_digest` on bytes, so a presented token of any bytes (non-ASCII, huge, empty) can
neither raise nor leak timing about a stored key.

What a key opens (docs/server.md#security):
- a pack's key opens that pack only; packs without keys are open to every caller;
- the skills hub opens with a hub key (`hub.api_keys`, `EP_MCP_HUB_KEY`); with no hub key
  configured it is open only on a server where no pack is keyed — a server that protects any
  pack keeps the hub closed over HTTP until it gets a key of its own.

With OAuth on (`server.auth`, serve/oauth.py) every pack is protected: a verified access
token arrives here as a `TokenGrant` — the packs its `ep:pack:<slug>` scopes name and the hub
if it holds `ep:hub` — and opens exactly those; API keys keep opening what they open.

Every decision returns an `Access`: the packs and whether the hub are visible. Fail closed:
an empty `Access` sees nothing, and a request that was never decided gets no server at all.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from urllib.parse import urlsplit

from ep_mcp.config.model import EnvKeys

logger = logging.getLogger(__name__)

MAX_TOKEN_BYTES = 4096
HUB_KEY_ENV = "EP_MCP_HUB_KEY"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
LOOPBACK_BINDS = ("127.0.0.1", "localhost", "::1")
WILDCARD_BINDS = ("0.0.0.0", "::", "")


def env_key_name(slug: str) -> str:
    """`EP_MCP_KEY_{SLUG}`: upper case, `-` and `.` → `_`."""
    return "EP_MCP_KEY_" + slug.upper().replace("-", "_").replace(".", "_")


def _digest(key: bytes) -> bytes:
    return hashlib.sha256(key).digest()


def _split_keys(value: str) -> list[str]:
    return [k.strip() for k in value.split(",") if k.strip()]


class Credential(Enum):
    NONE = "none"  # no Authorization header
    INVALID = "invalid"  # malformed, duplicated, wrong scheme or too long


@dataclass(frozen=True)
class TokenGrant:
    """A verified access token: the packs its scopes name and whether it names the hub."""

    packs: frozenset[str] = frozenset()
    hub: bool = False
    # the wall-clock second (time.time) after which the token is no longer accepted: a
    # `subscriptions/listen` stream it opened ends then (None: no end known)
    until: float | None = field(default=None, compare=False)


Presented = bytes | Credential | TokenGrant  # what a request's Authorization header became


@dataclass(frozen=True)
class Access:
    """What one request may see: these packs, and the skills hub or not."""

    packs: frozenset[str] = frozenset()
    hub: bool = False

    def __bool__(self) -> bool:
        return bool(self.packs) or self.hub


NOTHING = Access()


@dataclass(frozen=True)
class KeyRing:
    """Digests of every pack's keys and of the hub's. Packs without keys are open."""

    digests: Mapping[str, tuple[bytes, ...]] = field(default_factory=dict)
    hub_digests: tuple[bytes, ...] = ()
    oauth: bool = False  # `server.auth` on: no pack is open, a token or a key opens each

    @classmethod
    def build(
        cls,
        keys: Mapping[str, Iterable[str]],
        hub_keys: Iterable[str] = (),
        env_keys: EnvKeys | None = None,
    ) -> KeyRing:
        """From configured keys per slug plus those of `EP_MCP_KEY_{SLUG}` (``env_keys``, read
        at the edge); the hub's from ``hub_keys`` plus `EP_MCP_HUB_KEY`'s."""
        env_keys = env_keys or EnvKeys()
        out: dict[str, tuple[bytes, ...]] = {}
        for slug, configured in keys.items():
            all_keys = [k for k in configured if k] + list(env_keys.get(env_key_name(slug)))
            if all_keys:
                out[slug] = tuple(_digest(k.encode("utf-8")) for k in all_keys)
        hub = [k for k in hub_keys if k] + list(env_keys.get(HUB_KEY_ENV))
        return cls(out, tuple(_digest(k.encode("utf-8")) for k in hub))

    @property
    def keyed(self) -> frozenset[str]:
        return frozenset(self.digests)

    def _opens(self, presented: bytes) -> tuple[frozenset[str], bool]:
        """(slugs, hub) whose keys include the digest ``presented``; every digest is compared."""
        found = set()
        for slug, digests in self.digests.items():
            for d in digests:
                if hmac.compare_digest(presented, d):
                    found.add(slug)
        hub = False
        for d in self.hub_digests:
            if hmac.compare_digest(presented, d):
                hub = True
        return frozenset(found), hub

    def opens(self, token: bytes) -> frozenset[str]:
        return self._opens(_digest(token))[0]

    def is_key(self, token: bytes) -> bool:
        """``token`` is one of the configured API keys (of a pack or of the hub)."""
        packs, hub = self._opens(_digest(token))
        return bool(packs) or hub

    def protects(self, slug: str) -> bool:
        return self.oauth or slug in self.digests

    def hides(self) -> bool:
        """Some pack here needs a key or token: a slug a caller cannot open is answered the
        same whether it exists or not (no existence oracle beside `GET /packs`)."""
        return self.oauth or bool(self.digests)

    def _hub_without_key(self) -> bool:
        return not self.hub_digests and not self.digests and not self.oauth

    def access(self, credential: Presented, served: Sequence[str], hub: bool) -> Access:
        """Everything ``credential`` opens among ``served`` packs (and the hub when served)."""
        if isinstance(credential, TokenGrant):
            packs, hub_key = credential.packs, credential.hub
        elif isinstance(credential, bytes):
            packs, hub_key = self._opens(_digest(credential))
        else:
            packs, hub_key = frozenset(), False
        visible = frozenset(s for s in served if not self.protects(s) or s in packs)
        return Access(visible, hub and (hub_key or self._hub_without_key()))

    def possible_access(self, served: Sequence[str], hub: bool) -> set[Access]:
        """Every distinct `Access` a caller of the all-packs route can hold: without a key,
        and with each configured key. Servers are built for exactly these, ahead of time."""
        out = {self.access(Credential.NONE, served, hub)}
        for digest in {d for ds in self.digests.values() for d in ds} | set(self.hub_digests):
            packs, hub_key = self._opens(digest)
            visible = frozenset(s for s in served if not self.protects(s) or s in packs)
            out.add(Access(visible, hub and (hub_key or self._hub_without_key())))
        return {a for a in out if a}


def bearer_token(raw_headers: Sequence[tuple[bytes, bytes]]) -> bytes | Credential:
    """The token of the single `Authorization: Bearer <token>` header, as raw bytes."""
    values = [v for k, v in raw_headers if k.lower() == b"authorization"]
    if not values:
        return Credential.NONE
    if len(values) > 1:
        return Credential.INVALID
    parts = values[0].strip().split(None, 1)
    if len(parts) != 2 or parts[0].lower() != b"bearer":
        return Credential.INVALID
    token = parts[1].strip()
    if not token or len(token) > MAX_TOKEN_BYTES:
        return Credential.INVALID
    return token


@dataclass(frozen=True)
class Decision:
    """What one request may see, or the HTTP error that refuses it."""

    access: Access = NOTHING
    status: int = 200
    message: str = ""
    error: str = ""  # the RFC 6750 code of a refusal: invalid_token, insufficient_scope or none
    scope: str = ""  # the scope that would have opened it (insufficient_scope)

    @property
    def allowed(self) -> frozenset[str]:
        return self.access.packs


_NEED_KEY = "send `Authorization: Bearer <key>`"
_NEED_TOKEN = "send `Authorization: Bearer <key or access token>`"


def _decide_token(
    ring: KeyRing, served: Sequence[str], wanted: str | None, grant: TokenGrant, hub: bool
) -> Decision:
    """A verified token opens what its scopes name; anything else is `insufficient_scope`."""
    access = ring.access(grant, served, hub)
    if wanted is not None:
        if wanted not in served and not ring.hides():
            return Decision(NOTHING, 404, f"pack '{wanted[:100]}' not found")
        if wanted in access.packs:
            return Decision(Access(frozenset({wanted}), access.hub))
        scope = f"ep:pack:{wanted[:100]}"
        return Decision(
            NOTHING,
            403,
            f"this token's scopes do not open pack '{wanted[:100]}' — ask the authorization "
            f"server for scope {scope}",
            "insufficient_scope",
            scope,
        )
    if not access.packs and not (grant.hub and access.hub):
        return Decision(
            NOTHING,
            403,
            "this token's scopes open no pack here — ask for ep:pack:<slug> scopes",
            "insufficient_scope",
        )
    return Decision(access)


def decide(
    ring: KeyRing,
    served: Sequence[str],
    wanted: str | None,
    credential: Presented,
    *,
    hub: bool = False,
) -> Decision:
    """Authorize a request for pack ``wanted`` (one pack's route), or for every pack (None).

    A ``wanted`` not served is a 404 only where no pack needs a key; elsewhere it is refused
    like a pack the credential does not open. A key that opens nothing here is refused
    outright, even where open packs exist.
    """
    if isinstance(credential, TokenGrant):
        return _decide_token(ring, served, wanted, credential, hub)
    access = ring.access(credential, served, hub)
    opened_any = isinstance(credential, bytes) and (
        bool(ring.opens(credential)) or (access.hub and bool(ring.hub_digests))
    )
    need = _NEED_TOKEN if ring.oauth else _NEED_KEY
    what = "API key or access token" if ring.oauth else "API key"
    invalid = Decision(
        NOTHING,
        401,
        f"invalid {what} — {need} with a key configured for this pack"
        + (" or a valid access token" if ring.oauth else ""),
        "invalid_token",
    )
    if wanted is not None:
        if wanted not in served and not ring.hides():
            return Decision(NOTHING, 404, f"pack '{wanted[:100]}' not found")
        if wanted in access.packs:
            return Decision(Access(frozenset({wanted}), access.hub))
        if opened_any:
            return Decision(
                NOTHING,
                403,
                f"this key does not open pack '{wanted[:100]}' — GET /packs lists what it opens",
            )
        if credential is Credential.NONE:
            return Decision(NOTHING, 401, f"pack '{wanted[:100]}' needs an {what} — {need}")
        return invalid
    keys_or_tokens = ring.digests or ring.hub_digests or ring.oauth
    if credential is not Credential.NONE and not opened_any and keys_or_tokens:
        return invalid
    if not access:
        return Decision(NOTHING, 401, f"every pack here needs an {what} — {need}")
    return Decision(access)


# -- Host / Origin ----------------------------------------------------------------------------

_HOST_NAME = re.compile(
    r"^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$"
)


@dataclass(frozen=True)
class HostPort:
    host: str  # lower case; IPv6 in brackets
    port: int | None


def parse_host(value: str) -> HostPort | None:
    """A Host header value `host[:port]` (host: a DNS name, IPv4 or `[IPv6]`), else None."""
    value = value.strip().lower()
    if not value or any(c.isspace() or ord(c) < 0x21 or ord(c) > 0x7E for c in value):
        return None
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        try:
            ipaddress.IPv6Address(value[1:end])
        except ValueError:
            return None
        host, rest = value[: end + 1], value[end + 1 :]
    else:
        host, sep, port_text = value.partition(":")
        rest = sep + port_text
        if not _HOST_NAME.match(host):
            return None
    if not rest:
        return HostPort(host, None)
    if not rest.startswith(":") or not rest[1:].isdigit() or len(rest) > 6:
        return None
    port = int(rest[1:])
    return HostPort(host, port) if 0 < port < 65536 else None


def parse_origin(value: str) -> tuple[str, HostPort] | None:
    """(scheme, host and port) of an Origin header `scheme://host[:port]`, else None."""
    value = value.strip().lower()
    if any(c.isspace() for c in value):
        return None
    try:
        parts = urlsplit(value)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or parts.path or parts.query or parts.fragment:
        return None
    if "@" in parts.netloc:
        return None
    hp = parse_host(parts.netloc)
    return (parts.scheme, hp) if hp is not None else None


@dataclass(frozen=True)
class HostRule:
    """An allow-list entry: `host`, `host:port` or `host:*` (any port, or none)."""

    host: str
    port: int | None
    any_port: bool
    scheme: str | None = None  # for origins

    def matches(self, hp: HostPort, scheme: str | None = None) -> bool:
        if self.scheme is not None and scheme != self.scheme:
            return False
        if hp.host != self.host:
            return False
        return self.any_port or hp.port == self.port


def _rule(pattern: str, origin: bool) -> HostRule | None:
    p = pattern.strip().lower()
    scheme = None
    if origin:
        scheme, sep, p = p.partition("://")
        if not sep or scheme not in ("http", "https"):
            return None
    any_port = p.endswith(":*")
    hp = parse_host(p[:-2] if any_port else p)
    if hp is None:
        return None
    return HostRule(hp.host, hp.port, any_port, scheme)


def _rules(patterns: Iterable[str], origin: bool) -> tuple[tuple[HostRule, ...], bool]:
    rules, wildcard = [], False
    for p in patterns:
        if p.strip() == "*":
            wildcard = True
            continue
        rule = _rule(p, origin)
        if rule is None:
            logger.warning("ignoring allow-list entry %r: not a valid host[:port]", p[:100])
        else:
            rules.append(rule)
    return tuple(rules), wildcard


def default_allowed_hosts(bind: str, extra: Iterable[str] = ()) -> tuple[str, ...]:
    hosts = [f"{h}:*" for h in LOOPBACK_NAMES]
    if bind not in LOOPBACK_BINDS and bind not in WILDCARD_BINDS:
        hosts.append(f"[{bind}]:*" if ":" in bind else f"{bind}:*")
    hosts += list(extra)
    if bind in WILDCARD_BINDS and not list(extra):
        logger.warning(
            "serving on %s without server.mcp_allowed_hosts: only loopback Host headers are "
            "accepted (others get 421) — list your public host names in mcp_allowed_hosts",
            bind or "all interfaces",
        )
    return tuple(hosts)


def default_allowed_origins(extra: Iterable[str] = ()) -> tuple[str, ...]:
    return (
        *(f"http://{h}:*" for h in LOOPBACK_NAMES),
        *(f"https://{h}:*" for h in LOOPBACK_NAMES),
        *extra,
    )


def host_allowed(values: Sequence[str], patterns: Sequence[str]) -> bool:
    """Exactly one Host header, a valid `host[:port]`, matching an allow-list entry."""
    if len(values) != 1:
        return False
    hp = parse_host(values[0])
    if hp is None:
        return False
    rules, wildcard = _rules(patterns, origin=False)
    return wildcard or any(r.matches(hp) for r in rules)


def origin_allowed(values: Sequence[str], patterns: Sequence[str]) -> bool:
    """No Origin header (a non-browser client) is allowed; otherwise exactly one, valid and
    matching an allow-list entry (`null` and `file://` never match)."""
    if not values:
        return True
    if len(values) != 1:
        return False
    parsed = parse_origin(values[0])
    if parsed is None:
        return False
    scheme, hp = parsed
    rules, wildcard = _rules(patterns, origin=True)
    return wildcard or any(r.matches(hp, scheme) for r in rules)
