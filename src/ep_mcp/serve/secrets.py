"""API keys from secret files: ``EP_MCP_KEY_{SLUG}_FILE`` and ``EP_MCP_HUB_KEY_FILE``.

The Docker / Kubernetes convention: a secret is mounted as a file (``/run/secrets/...``) and an
environment variable ending in ``_FILE`` names it. Each non-blank line of the file (or each
comma-separated item) is one key; they are added to the keys of the variable without
``_FILE``, if it is set too. The path must be absolute (so the keys of a pack whose slug ends
in ``-file`` are not mistaken for one). Resolved once at the edge, before the key ring is built.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ep_mcp.errors import ConfigError

MAX_SECRET_BYTES = 64 * 1024
_PREFIXES = ("EP_MCP_KEY_", "EP_MCP_HUB_KEY")


def _keys_in(name: str, path: str) -> list[str]:
    try:
        with Path(path).open("rb") as f:
            raw = f.read(MAX_SECRET_BYTES + 1)
    except OSError as exc:
        raise ConfigError(
            f"{name} names {path}, which cannot be read ({exc.strerror or exc}) — mount the "
            "secret there or unset the variable"
        ) from None
    if len(raw) > MAX_SECRET_BYTES:
        raise ConfigError(f"{name}: {path} is larger than {MAX_SECRET_BYTES} bytes — not a key")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{name}: {path} is not UTF-8 text — write one key per line") from None
    return [k.strip() for line in text.splitlines() for k in line.split(",") if k.strip()]


def with_key_files(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with every ``EP_MCP_KEY_*_FILE`` / ``EP_MCP_HUB_KEY_FILE`` read into the
    variable it names (comma-separated, after any keys that variable already holds)."""
    out = dict(env)
    for name, value in env.items():
        if not name.endswith("_FILE") or not name.startswith(_PREFIXES):
            continue
        if not Path(value).is_absolute():  # a key of a slug ending in "-file", not a path
            continue
        target = name[: -len("_FILE")]
        if target == "EP_MCP_KEY_":  # no slug
            continue
        keys = _keys_in(name, value)
        if not keys:
            raise ConfigError(f"{name}: {value} holds no key — write one key per line")
        existing = [k for k in out.get(target, "").split(",") if k.strip()]
        out[target] = ",".join([*existing, *keys])
    return out
