"""Per-pack API keys and Host/Origin allow-lists: pure checks the HTTP layer calls.

Keys are kept only as SHA-256 digests and compared with `hmac.compare_digest` on bytes, so
a presented token of any bytes (non-ASCII, huge, empty) can neither raise nor leak timing
about a stored key. A key opens only the packs it was configured for.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum

logger = logging.getLogger(__name__)

MAX_TOKEN_BYTES = 4096
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
LOOPBACK_BINDS = ("127.0.0.1", "localhost", "::1")
WILDCARD_BINDS = ("0.0.0.0", "::", "")


def env_key_name(slug: str) -> str:
    """`EP_MCP_KEY_{SLUG}`: upper case, `-` and `.` → `_`."""
    return "EP_MCP_KEY_" + slug.upper().replace("-", "_").replace(".", "_")


def _digest(key: bytes) -> bytes:
    return hashlib.sha256(key).digest()


class Credential(Enum):
    NONE = "none"  # no Authorization header
    INVALID = "invalid"  # malformed, duplicated, wrong scheme or too long


@dataclass(frozen=True)
class KeyRing:
    """Digests of every pack's keys. Packs without keys are open."""

    digests: Mapping[str, tuple[bytes, ...]] = field(default_factory=dict)

    @classmethod
    def build(
        cls, keys: Mapping[str, Iterable[str]], env: Mapping[str, str] | None = None
    ) -> KeyRing:
        """From configured keys per slug plus `EP_MCP_KEY_{SLUG}` (comma-separated) in env."""
        out: dict[str, tuple[bytes, ...]] = {}
        for slug, configured in keys.items():
            all_keys = [k for k in configured if k]
            extra = (env or {}).get(env_key_name(slug), "")
            all_keys += [k.strip() for k in extra.split(",") if k.strip()]
            if all_keys:
                out[slug] = tuple(_digest(k.encode("utf-8")) for k in all_keys)
        return cls(out)

    @property
    def keyed(self) -> frozenset[str]:
        return frozenset(self.digests)

    def opens(self, token: bytes) -> frozenset[str]:
        """Slugs whose keys include ``token``; every digest is compared (no early exit)."""
        presented = _digest(token)
        found = set()
        for slug, digests in self.digests.items():
            for d in digests:
                if hmac.compare_digest(presented, d):
                    found.add(slug)
        return frozenset(found)


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
    """What one request may see: the packs it opens, or an HTTP error."""

    allowed: frozenset[str]
    status: int = 200
    message: str = ""


def decide(
    ring: KeyRing, served: Sequence[str], wanted: str | None, credential: bytes | Credential
) -> Decision:
    """Authorize a request for pack ``wanted`` (or for all packs when None)."""
    opened = ring.opens(credential) if isinstance(credential, bytes) else frozenset()
    invalid = Decision(
        frozenset(),
        401,
        "invalid API key — send `Authorization: Bearer <key>` with a key configured for this pack",
    )
    if wanted is not None:
        if wanted not in ring.keyed or wanted in opened:
            return Decision(frozenset({wanted}))
        if opened:
            return Decision(frozenset(), 403, f"this key does not open pack '{wanted[:100]}'")
        if credential is Credential.NONE:
            return Decision(
                frozenset(),
                401,
                f"pack '{wanted[:100]}' needs an API key — send `Authorization: Bearer <key>`",
            )
        return invalid
    if ring.keyed and credential is not Credential.NONE and not opened:
        return invalid
    open_packs = frozenset(s for s in served if s not in ring.keyed)
    allowed = open_packs | (opened & frozenset(served))
    if not allowed:
        return Decision(
            frozenset(),
            401,
            "every pack here needs an API key — send `Authorization: Bearer <key>`",
        )
    return Decision(allowed)


# -- Host / Origin ----------------------------------------------------------------------------


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


def _split_port(value: str) -> tuple[str, str | None]:
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return value, None
        rest = value[end + 1 :]
        return value[: end + 1], rest[1:] if rest.startswith(":") else None
    host, sep, port = value.rpartition(":")
    return (host, port) if sep else (value, None)


def _match(value: str, patterns: Iterable[str]) -> bool:
    value = value.strip().lower()
    for pattern in patterns:
        p = pattern.strip().lower()
        if p == "*" or p == value:
            return True
        if p.endswith(":*"):
            base = p[:-2]
            host, port = _split_port(value)
            if host == base and (port is None or port.isdigit()):
                return True
    return False


def host_allowed(host: str | None, patterns: Sequence[str]) -> bool:
    return host is not None and _match(host, patterns)


def origin_allowed(origin: str | None, patterns: Sequence[str]) -> bool:
    """No Origin header (a non-browser client) is allowed; a present one must match."""
    return origin is None or _match(origin, patterns)
