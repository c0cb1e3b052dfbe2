"""The environment, read once at the edge into the settings; the core never sees it.

`resolve_environment(settings, env)` fills in everything ep-mcp takes from environment
variables: the data folder (``EP_MCP_HOME`` / ``XDG_DATA_HOME``), the pinned "today"
(``EP_EVAL_TODAY``), the embedding provider (``EP_MCP_EMBEDDING_PROVIDER``), the provider's key
and endpoint (``OPENAI_API_KEY``, ``AZURE_OPENAI_ENDPOINT`` … or ``embedding.api_key_env``), and
the pack and hub keys (``EP_MCP_KEY_{SLUG}``, ``EP_MCP_HUB_KEY`` and their ``_FILE`` variants:
the Docker / Kubernetes convention, a secret mounted as a file named by a variable ending in
``_FILE``; each non-blank line or comma-separated item of the file is one key, added to the keys
of the variable without ``_FILE``; the path must be absolute, so the keys of a pack whose slug
ends in ``-file`` are not mistaken for one).
The CLI calls it once; the serve app, runtime, embedders and key ring read the settings only.
Values already in the settings (the config file, flags) win over the environment, except the
provider, where ``EP_MCP_EMBEDDING_PROVIDER`` overrides the file (flags > env > file).
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping
from pathlib import Path

from ep_mcp.config.model import EnvKeys, Settings, default_home
from ep_mcp.errors import ConfigError

# the variable holding each HTTP provider's key (the embedders' own defaults; a test keeps
# the two in step) and the endpoint variable of the providers that need one
PROVIDER_KEY_ENV = {
    "openai": "OPENAI_API_KEY",
    "openai-compatible": "EP_MCP_EMBEDDING_API_KEY",
    "azure-openai": "AZURE_OPENAI_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "voyage": "VOYAGE_API_KEY",
}
PROVIDER_ENDPOINT_ENV = {
    "azure-openai": "AZURE_OPENAI_ENDPOINT",
    "openai-compatible": "EP_MCP_EMBEDDING_ENDPOINT",
}
KEY_PREFIX = "EP_MCP_KEY_"
HUB_KEY_ENV = "EP_MCP_HUB_KEY"

MAX_SECRET_BYTES = 64 * 1024
_PREFIXES = ("EP_MCP_KEY_", "EP_MCP_HUB_KEY")  # `_FILE` variants: Docker/Kubernetes secrets


def _keys_in(name: str, path: str) -> list[str]:
    text = _text_of(name, path)
    return [k.strip() for line in text.splitlines() for k in line.split(",") if k.strip()]


def _text_of(name: str, path: str) -> str:
    """The UTF-8 text of the secret file ``path`` (named by ``name``), bounded."""
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
    return text


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


def _today(settings: Settings, env: Mapping[str, str]) -> str | None:
    pinned = env.get("EP_EVAL_TODAY", "").strip()
    if not pinned or settings.retrieval.today:
        return settings.retrieval.today
    try:
        datetime.date.fromisoformat(pinned)
    except ValueError:
        raise ConfigError(f"EP_EVAL_TODAY must be a date YYYY-MM-DD — got {pinned!r}") from None
    return pinned


def _embedding_overrides(settings: Settings, env: Mapping[str, str]) -> dict[str, object]:
    spec = settings.embedding
    provider = env.get("EP_MCP_EMBEDDING_PROVIDER", "").strip() or spec.provider
    out: dict[str, object] = {"provider": provider}
    key_env = spec.api_key_env or PROVIDER_KEY_ENV.get(provider)
    if spec.api_key is None and key_env and env.get(key_env, "").strip():
        out["api_key"] = env[key_env].strip()
    endpoint_env = PROVIDER_ENDPOINT_ENV.get(provider)
    if spec.endpoint is None and endpoint_env and env.get(endpoint_env, "").strip():
        out["endpoint"] = env[endpoint_env].strip()
    return out


def _env_keys(env: Mapping[str, str]) -> EnvKeys:
    """Every ``EP_MCP_KEY_*`` / ``EP_MCP_HUB_KEY`` variable's keys (``_FILE`` files read), by
    variable name: slugs are known only once the packs load."""
    resolved = with_key_files(env)
    found = []
    for name, value in sorted(resolved.items()):
        if not (name.startswith(KEY_PREFIX) or name == HUB_KEY_ENV):
            continue
        keys = tuple(k.strip() for k in value.split(",") if k.strip())
        if keys:
            found.append((name, keys))
    return EnvKeys(tuple(found))


def _client_secret(settings: Settings, env: Mapping[str, str]) -> str | None:
    """The introspection client's secret, from ``server.auth.client_secret_file`` or the
    variable ``client_secret_env`` names; never logged or shown."""
    auth = settings.server.auth
    if auth.client_secret is not None or not auth.enabled:
        return auth.client_secret
    if auth.client_secret_file is not None:
        name = "server.auth.client_secret_file"
        lines = [ln.strip() for ln in _text_of(name, str(auth.client_secret_file)).splitlines()]
        secrets = [ln for ln in lines if ln]
        if len(secrets) != 1:
            raise ConfigError(
                f"{name}: {auth.client_secret_file} must hold exactly one secret on one line"
            )
        return secrets[0]
    if auth.client_secret_env is not None:
        value = env.get(auth.client_secret_env, "").strip()
        if not value:
            raise ConfigError(
                f"server.auth.client_secret_env names {auth.client_secret_env}, which is "
                "empty or unset — export the introspection client's secret there"
            )
        return value
    return None


def resolve_environment(settings: Settings, env: Mapping[str, str]) -> Settings:
    """``settings`` with everything the environment says filled in (see the module doc)."""
    retrieval = dataclasses.replace(settings.retrieval, today=_today(settings, env))
    embedding = dataclasses.replace(settings.embedding, **_embedding_overrides(settings, env))  # type: ignore[arg-type]
    reranker = settings.reranker
    if reranker.api_key is None and reranker.api_key_env and env.get(reranker.api_key_env, ""):
        reranker = dataclasses.replace(reranker, api_key=env[reranker.api_key_env].strip())
    auth = dataclasses.replace(settings.server.auth, client_secret=_client_secret(settings, env))
    return dataclasses.replace(
        settings,
        server=dataclasses.replace(settings.server, auth=auth),
        reranker=reranker,
        home=settings.home or default_home(env),
        retrieval=retrieval,
        embedding=embedding,
        env_keys=_env_keys(env),
    )
